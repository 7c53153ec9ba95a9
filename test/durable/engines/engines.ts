import { wantsStore } from "../../kit/store-names.js";
import { dynamodbSteps } from "./dynamodb.js";
import { postgresSteps } from "./postgres.js";
import { sqliteSteps } from "./sqlite.js";
import type { StepEngineUnderTest } from "./under-test.js";
import { valkeySteps } from "./valkey.js";

/** Every engine's guarded steps (EONCE_STORES picks, as for the store suites). */
export const STEP_ENGINES: StepEngineUnderTest[] = [
  dynamodbSteps,
  postgresSteps,
  sqliteSteps,
  valkeySteps,
].filter((e) => wantsStore(process.env.EONCE_STORES, e.name as never));
