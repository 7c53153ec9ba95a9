/**
 * What Lambda's stream event source mapping reads of a stream, the same for Kinesis and DynamoDB Streams: its
 * shards with their parents, and a shard's records after a sequence number, each already in the shape Lambda
 * hands the function (kinesis-reader.ts, dynamodb-stream-reader.ts).
 */
export interface StreamShard {
  shardId: string;
  /** A split's parent, or a merge's two parents: read to their end before this shard. */
  parentShardIds: string[];
}

/** One record as read: its order key and partition, and the record Lambda passes. */
export interface ReadRecord {
  sequenceNumber: string;
  /** Kinesis: the partition key; DynamoDB Streams: the item's keys. Records of one partition keep their order. */
  partitionKey: string;
  /** When the stream took it (ms since the epoch): what `maxRecordAgeMs` is measured from. */
  arrivalMs: number;
  /** The Lambda event record (`KinesisStreamRecord` or `DynamoDBRecord`). */
  lambdaRecord: unknown;
}

/** One read of a shard: its records in order, and whether the shard has ended. */
export interface ShardRead {
  records: ReadRecord[];
  /** No record follows these: the shard is closed (split, merged or its stream disabled) and read to its end. */
  ended: boolean;
}

/** A stream as the event source mapping reads it (`KinesisReader`, `DynamoDBStreamReader`). */
export interface StreamReader {
  /** Which stream service this is (the trace's source). */
  readonly source: "kinesis" | "dynamodb-streams";
  /** The ARN Lambda puts in each record's `eventSourceARN` (a DynamoDB table's stream ARN). */
  readonly streamArn: string;
  /** Every shard the stream lists now, open or closed, with its parents. */
  listShards(): Promise<StreamShard[]>;
  /** Up to `limit` records after `afterSequenceNumber` (from the shard's start when undefined). */
  read(shardId: string, afterSequenceNumber: string | undefined, limit: number): Promise<ShardRead>;
}
