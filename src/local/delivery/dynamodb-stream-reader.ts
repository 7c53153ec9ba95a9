import {
  type AttributeValue,
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from "@aws-sdk/client-dynamodb-streams";
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from "aws-lambda";
import { allPages } from "./all-pages.js";
import type { ReadRecord, ShardRead, StreamReader, StreamShard } from "./stream-reader.js";

/**
 * A DynamoDB table's stream (DynamoDB Local serves the Streams API at its own endpoint) as Lambda's event source
 * mapping reads it. The SDK turns binary values into bytes and times into Dates; Lambda's records carry base64 and
 * epoch seconds, as here.
 */
export class DynamoDBStreamReader implements StreamReader {
  readonly source = "dynamodb-streams";
  readonly #client: DynamoDBStreamsClient;
  readonly streamArn: string;

  constructor(client: DynamoDBStreamsClient, streamArn: string) {
    this.#client = client;
    this.streamArn = streamArn;
  }

  async listShards(): Promise<StreamShard[]> {
    const shards = await allPages(async (start) => {
      const out = await this.#client.send(
        new DescribeStreamCommand({ StreamArn: this.streamArn, ExclusiveStartShardId: start }),
      );
      return {
        items: out.StreamDescription?.Shards ?? [],
        next: out.StreamDescription?.LastEvaluatedShardId,
      };
    });
    return shards.map((s) => ({
      shardId: s.ShardId ?? "",
      parentShardIds: s.ParentShardId ? [s.ParentShardId] : [],
    }));
  }

  async read(shardId: string, after: string | undefined, limit: number): Promise<ShardRead> {
    const iterator = await this.#client.send(
      new GetShardIteratorCommand({
        StreamArn: this.streamArn,
        ShardId: shardId,
        ...(after === undefined
          ? { ShardIteratorType: "TRIM_HORIZON" }
          : { ShardIteratorType: "AFTER_SEQUENCE_NUMBER", SequenceNumber: after }),
      }),
    );
    if (!iterator.ShardIterator) return { records: [], ended: true };
    const out = await this.#client.send(
      new GetRecordsCommand({ ShardIterator: iterator.ShardIterator, Limit: limit }),
    );
    const records = (out.Records ?? []).map((r): ReadRecord => {
      const d = r.dynamodb ?? {};
      const arrivalMs = d.ApproximateCreationDateTime?.getTime() ?? Date.now();
      const lambdaRecord: DynamoDBRecord = {
        eventID: r.eventID,
        eventName: r.eventName,
        eventVersion: r.eventVersion ?? "1.1",
        eventSource: "aws:dynamodb",
        awsRegion: r.awsRegion,
        eventSourceARN: this.streamArn,
        dynamodb: {
          ApproximateCreationDateTime: Math.floor(arrivalMs / 1000),
          ...(d.Keys ? { Keys: lambdaImage(d.Keys) } : {}),
          ...(d.NewImage ? { NewImage: lambdaImage(d.NewImage) } : {}),
          ...(d.OldImage ? { OldImage: lambdaImage(d.OldImage) } : {}),
          SequenceNumber: d.SequenceNumber,
          SizeBytes: d.SizeBytes,
          StreamViewType: d.StreamViewType,
        },
        ...(r.userIdentity
          ? {
              userIdentity: {
                type: r.userIdentity.Type ?? "",
                principalId: r.userIdentity.PrincipalId ?? "",
              },
            }
          : {}),
      };
      return {
        sequenceNumber: d.SequenceNumber ?? "",
        partitionKey: JSON.stringify(lambdaRecord.dynamodb?.Keys ?? {}),
        arrivalMs,
        lambdaRecord,
      };
    });
    return { records, ended: !out.NextShardIterator };
  }
}

/** An image as Lambda's JSON has it: binary values base64, sets of them too. */
function lambdaImage(image: Record<string, AttributeValue>): Record<string, LambdaAttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([k, v]) => [k, lambdaValue(v)]));
}

function lambdaValue(v: AttributeValue): LambdaAttributeValue {
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
  if (v.B !== undefined) return { B: b64(v.B) };
  if (v.BS !== undefined) return { BS: v.BS.map(b64) };
  if (v.M !== undefined) return { M: lambdaImage(v.M) };
  if (v.L !== undefined) return { L: v.L.map(lambdaValue) };
  return v as LambdaAttributeValue;
}
