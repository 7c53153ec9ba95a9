/**
 * Cold-start entry (bench/cold-start.ts): an S3-triggered function on effectively-once with the DynamoDB state
 * table, imported as a user imports it (the `lambda` and DynamoDB engine entry points). The handler writes one row.
 */
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore } from "../../src/engines/dynamodb/index.js";
import { s3Handler } from "../../src/lambda/index.js";

const client = new DynamoDBClient({});
const store = new DynamoDBStore({ client, tableName: process.env.STATE_TABLE ?? "state" });

export const handler = s3Handler(
  async (event) => {
    if (event.kind !== "s3") return;
    await client.send(
      new PutItemCommand({
        TableName: process.env.OUTPUT_TABLE ?? "thumbnails",
        Item: { pk: { S: event.subject }, etag: { S: event.etag ?? "" } },
      }),
    );
  },
  { store },
);
