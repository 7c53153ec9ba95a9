/**
 * Cold-start entry (bench/cold-start.ts): the same S3-triggered function with Powertools idempotency, as its docs
 * set it up for records: `makeIdempotent` around the per-record function, a `DynamoDBPersistenceLayer`.
 */
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { Context, S3Event, S3EventRecord } from "aws-lambda";

const client = new DynamoDBClient({});
const persistenceStore = new DynamoDBPersistenceLayer({
  tableName: process.env.IDEMPOTENCY_TABLE ?? "idempotency",
  awsSdkV3Client: client,
});
const config = new IdempotencyConfig({
  eventKeyJmesPath: "[s3.bucket.name, s3.object.key, s3.object.sequencer, eventName]",
  throwOnNoIdempotencyKey: true,
});

const processRecord = makeIdempotent(
  async (record: S3EventRecord) => {
    await client.send(
      new PutItemCommand({
        TableName: process.env.OUTPUT_TABLE ?? "thumbnails",
        Item: {
          pk: { S: `${record.s3.bucket.name}/${record.s3.object.key}` },
          etag: { S: record.s3.object.eTag ?? "" },
        },
      }),
    );
  },
  { persistenceStore, config },
);

export const handler = async (event: S3Event, context: Context): Promise<void> => {
  config.registerLambdaContext(context);
  for (const record of event.Records) await processRecord(record);
};
