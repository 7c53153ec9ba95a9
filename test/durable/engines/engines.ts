import { ENGINES } from "../../../src/engines/registry.js";
import { wantsStore } from "../../kit/store-names.js";
import "../../kit/test-engines.js";
import type { StepEngineUnderTest } from "./under-test.js";

/**
 * Every engine with guarded steps (`durable` in src/engines/registry.ts), each opened by the `stepsUnderTest` of
 * test/durable/engines/<folder>.ts, loaded when its suite starts; EONCE_STORES picks, as for the store suites. An
 * engine without one fails its suites at once.
 */
export const STEP_ENGINES: StepEngineUnderTest[] = ENGINES.filter(
  (e) => e.durable && wantsStore(process.env.EONCE_STORES, e.name),
).map((e) => ({
  name: e.name,
  async open() {
    const module = (await import(`./${e.folder}.ts`)) as { stepsUnderTest?: StepEngineUnderTest };
    if (!module.stepsUnderTest)
      throw new Error(
        `engine ${e.name} (src/engines/registry.ts) has no stepsUnderTest in test/durable/engines/${e.folder}.ts`,
      );
    return module.stepsUnderTest.open();
  },
}));
