import { randomUUID } from "node:crypto";
import { memoryUnderTest } from "../memory/under-test.js";
import { toyDatabase } from "./engine.js";

/** The toy engine in the store and guard suites (test/kit/stores.ts): a toy database of its own per suite. */
export const storesUnderTest = {
  toy: async () => memoryUnderTest(await toyDatabase(`toy://contract-${randomUUID()}`), "toy"),
};
