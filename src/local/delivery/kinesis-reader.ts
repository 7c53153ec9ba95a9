import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  type KinesisClient,
  ListShardsCommand,
} from "@aws-sdk/client-kinesis";
import type { KinesisStreamRecord } from "aws-lambda";
import { LOCAL_REGION } from "../aws-local.js";
import { allPages } from "./all-pages.js";
import type { ReadRecord, ShardRead, StreamReader, StreamShard } from "./stream-reader.js";

/** A Kinesis stream as Lambda's event source mapping reads it (GetRecords polling, not enhanced fan-out). */
export class KinesisReader implements StreamReader {
  readonly source = "kinesis";
  readonly #client: KinesisClient;
  readonly #streamName: string;
  readonly streamArn: string;

  constructor(client: KinesisClient, streamName: string, streamArn: string) {
    this.#client = client;
    this.#streamName = streamName;
    this.streamArn = streamArn;
  }

  async listShards(): Promise<StreamShard[]> {
    // A page after the first names the stream by its token alone (ListShards refuses both).
    const shards = await allPages(async (token) => {
      const out = await this.#client.send(
        new ListShardsCommand(token ? { NextToken: token } : { StreamName: this.#streamName }),
      );
      return { items: out.Shards ?? [], next: out.NextToken };
    });
    return shards.map((s) => ({
      shardId: s.ShardId ?? "",
      parentShardIds: [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => !!p),
    }));
  }

  async read(shardId: string, after: string | undefined, limit: number): Promise<ShardRead> {
    const iterator = await this.#client.send(
      new GetShardIteratorCommand({
        StreamName: this.#streamName,
        ShardId: shardId,
        ...(after === undefined
          ? { ShardIteratorType: "TRIM_HORIZON" }
          : { ShardIteratorType: "AFTER_SEQUENCE_NUMBER", StartingSequenceNumber: after }),
      }),
    );
    const out = await this.#client.send(
      new GetRecordsCommand({ ShardIterator: iterator.ShardIterator, Limit: limit }),
    );
    const records = (out.Records ?? []).map((r): ReadRecord => {
      const arrivalMs = r.ApproximateArrivalTimestamp?.getTime() ?? Date.now();
      const sequenceNumber = r.SequenceNumber ?? "";
      const lambdaRecord: KinesisStreamRecord = {
        awsRegion: LOCAL_REGION,
        eventID: `${shardId}:${sequenceNumber}`,
        eventName: "aws:kinesis:record",
        eventSource: "aws:kinesis",
        eventSourceARN: this.streamArn,
        eventVersion: "1.0",
        invokeIdentityArn: `arn:aws:iam::000000000000:role/eonce-local`,
        kinesis: {
          kinesisSchemaVersion: "1.0",
          partitionKey: r.PartitionKey ?? "",
          sequenceNumber,
          data: Buffer.from(r.Data ?? new Uint8Array()).toString("base64"),
          approximateArrivalTimestamp: arrivalMs / 1000,
        },
      };
      return { sequenceNumber, partitionKey: r.PartitionKey ?? "", arrivalMs, lambdaRecord };
    });
    // A closed shard read to its end has no next iterator.
    return { records, ended: !out.NextShardIterator };
  }
}
