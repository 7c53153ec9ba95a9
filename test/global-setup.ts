import type { TestProject } from "vitest/node";
import { type DynamoDBLocal, startDynamoDBLocal } from "../src/local/dynamodb-local.js";

let ddb: DynamoDBLocal | undefined;

export async function setup(project: TestProject) {
  ddb = await startDynamoDBLocal();
  project.provide("dynamodbEndpoint", ddb.endpoint);
}

export async function teardown() {
  await ddb?.stop();
}
