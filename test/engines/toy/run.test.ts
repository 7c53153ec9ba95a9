import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runHandler } from "../../../src/cli/run/run-handler.js";
import { TOY_URL_VARIABLE, toyDatabase } from "./engine.js";
import "../../kit/test-engines.js";

/*
 * `eonce run --state-store toy`: the run takes the toy engine (engine.ts beside this file) from the registry, hands
 * the handler the variable the engine names for `--state-url`, and reads the state back through the engine's admin.
 * In the integration project (the run's S3 and Lambda endpoints).
 */
describe("eonce run on the toy engine", () => {
  it(`hands the handler its ${TOY_URL_VARIABLE} and reads the state back for I2 and I3`, async () => {
    const url = `toy://run-${randomUUID().slice(0, 8)}`;
    const report = await runHandler({
      handler: "test/engines/toy/handler.ts:handler",
      generate: 4,
      reuploads: 2,
      stateStore: "toy",
      stateUrl: url,
    });
    const states = report.invariants.filter((i) => i.id === "I2" || i.id === "I3");
    expect(states.map((i) => i.status)).toEqual(["pass", "pass"]);
    expect((await toyDatabase(url)).records().length).toBeGreaterThan(0);
  }, 60_000);
});
