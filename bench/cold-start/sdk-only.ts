/**
 * Cold-start entry (bench/cold-start.ts): the DynamoDB client alone, what both functions load from the runtime's
 * AWS SDK. The difference to it is each function's own evaluation.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";

export const client = new DynamoDBClient({});
