import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { custom, required, string } from "../../core/options.js";

/** The option fields every DynamoDB store and sink shares: the client and the table. */
export const DYNAMODB_TABLE_FIELDS = {
  client: required(
    custom<DynamoDBClient>(
      "a DynamoDBClient",
      (v) => typeof (v as DynamoDBClient | null)?.send === "function",
    ),
  ),
  tableName: required(string()),
};
