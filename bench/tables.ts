import { DeleteTableCommand, type DynamoDBClient, ResourceNotFoundException } from "@aws-sdk/client-dynamodb";
import { createTableIfMissing } from "../src/engines/dynamodb/schema.js";

/** An on-demand table with one string hash key (DynamoDB Local creates it ACTIVE at once). */
export async function createTable(client: DynamoDBClient, name: string, hashKey = "pk"): Promise<void> {
  await createTableIfMissing(client, name, hashKey);
}

/** Dropped after each run: DynamoDB Local keeps everything in its 512 MB heap. */
export async function dropTables(client: DynamoDBClient, names: string[]): Promise<void> {
  for (const name of names) {
    try {
      await client.send(new DeleteTableCommand({ TableName: name }));
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
    }
  }
}
