/**
 * Cold-start entry (bench/cold-start.ts): bench/cold-start/powertools-s3.ts with what our wrapper also does, logs and
 * metrics, through Powertools Logger and Metrics as their docs set them up without Middy: a Logger, a Metrics with a
 * namespace, the Lambda context added to the logger (what `injectLambdaContext` does), one line and one counter per
 * record and the metrics published at the end of the invocation (what `logMetrics` does).
 */
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { Context, S3Event, S3EventRecord } from "aws-lambda";

const logger = new Logger({ serviceName: "thumbnails" });
const metrics = new Metrics({ namespace: "Thumbnails", serviceName: "thumbnails" });
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
    const pk = `${record.s3.bucket.name}/${record.s3.object.key}`;
    await client.send(
      new PutItemCommand({
        TableName: process.env.OUTPUT_TABLE ?? "thumbnails",
        Item: { pk: { S: pk }, etag: { S: record.s3.object.eTag ?? "" } },
      }),
    );
    logger.info(`processed ${pk}`);
    metrics.addMetric("processed", MetricUnit.Count, 1);
  },
  { persistenceStore, config },
);

export const handler = async (event: S3Event, context: Context): Promise<void> => {
  logger.addContext(context);
  config.registerLambdaContext(context);
  try {
    for (const record of event.Records) await processRecord(record);
  } finally {
    metrics.publishStoredMetrics();
  }
};
