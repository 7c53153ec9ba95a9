import type { TestProject } from "vitest/node";
import { ensureTestPrerequisites } from "../scripts/test-prerequisites.mjs";
import { type DynamoDBLocal, startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";

let ddb: DynamoDBLocal | undefined;

/**
 * The integration project's setup: what the machine must have (Java for DynamoDB Local, Chromium for the report
 * test; installed here when possible, as `npm test`'s pretest does), then one DynamoDB Local for the whole run,
 * provided to the tests as `inject("dynamodbEndpoint")`.
 */
export async function setup(project: TestProject) {
  const problems = ensureTestPrerequisites();
  if (problems.length > 0) {
    const error = new Error(problems.join("\n"));
    error.stack = error.message; // one line per problem, no stack
    throw error;
  }
  // A JVM's start on a busy 2-core machine can take longer than the runtime's default.
  ddb = await startDynamoDBLocal({ startTimeoutMs: 90_000 });
  project.provide("dynamodbEndpoint", ddb.endpoint);
}

export async function teardown() {
  await ddb?.stop();
}
