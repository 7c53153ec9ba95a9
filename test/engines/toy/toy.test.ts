import { randomUUID } from "node:crypto";
import { Command, CommanderError } from "commander";
import { describe, expect, it } from "vitest";
import { registerState } from "../../../src/cli/state.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import type { Engine } from "../../../src/engines/engine.js";
import {
  ADMIN_ENGINE_NAMES,
  ENGINE_NAMES,
  EngineRegistrationError,
  registerEngine,
} from "../../../src/engines/registry.js";
import { BROKEN_STORES } from "../../../src/sim/broken.js";
import { runCampaign } from "../../../src/sim/campaign.js";
import { toyDatabase, toyEngine } from "./engine.js";
import "../../kit/test-engines.js";

/*
 * The toy engine, defined only in the test suite (engine.ts beside this file) and registered with `registerEngine`
 * (test/kit/test-engines.ts): the simulator and `eonce state` (and `eonce run`, run.test.ts) take it from the registry as they take the
 * package's engines, with no edit of theirs. The store contract suite runs it too (test/kit/stores.ts: its factory is
 * under-test.ts beside this file).
 */

describe("registerEngine", () => {
  it("has added the toy engine: a store name, and a state kind (it has an admin)", () => {
    expect(ENGINE_NAMES).toContain("toy");
    expect(ADMIN_ENGINE_NAMES).toContain("toy");
  });

  it("refuses a name taken, and a malformed engine, saying why", () => {
    expect(() => registerEngine(toyEngine)).toThrow(/an engine named toy is already registered/);
    const bad = { ...toyEngine, name: "Bad Name", connection: ["nope"], limits: { maxResultBytes: 0 } };
    let error: unknown;
    try {
      registerEngine(bad as unknown as Engine);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EngineRegistrationError);
    expect((error as EngineRegistrationError).problems).toEqual([
      'name "Bad Name" is not lowercase letters, digits and dashes',
      "connection: nope is not a connection option",
      "requires url, not in connection",
      "limits.maxResultBytes and limits.maxWritesPerCommit must be at least 1",
    ]);
    expect(ENGINE_NAMES.filter((n) => n === "toy")).toHaveLength(1);
  });
});

describe("the simulator on the toy engine", () => {
  it("runs seeded histories through the registry with no violation", async () => {
    const summary = await runCampaign({ engine: "toy", histories: 40, seed: 1 });
    expect(summary.histories).toBe(40);
    expect(summary.violations).toBe(0);
  });

  it("catches a broken store on it", async () => {
    const summary = await runCampaign({
      engine: "toy",
      histories: 200,
      seed: 1,
      wrapStore: BROKEN_STORES["commit-ignores-fence"]?.wrap,
      stopWhen: (s) => s.violations > 0,
    });
    expect(summary.violations).toBeGreaterThan(0);
  });
});

/** `eonce state …` in-process, as test/cli/state.test.ts runs it. */
async function state(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = { code: 0, out: "", err: "" };
  const program = new Command("eonce").exitOverride();
  registerState(program, {
    out: (s) => {
      r.out += s;
    },
    err: (s) => {
      r.err += s;
    },
    exit: (code) => {
      r.code = code;
    },
    now: () => Date.now(),
  });
  try {
    await program.parseAsync(["state", ...args], { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    r.code = error.exitCode === 0 ? 0 : 2;
  }
  return r;
}

describe("eonce state on the toy engine", () => {
  it("lists and gets what the guard left in a toy database, and asks for its --url", async () => {
    const url = `toy://state-${randomUUID().slice(0, 8)}`;
    const guard = createGuard({ store: await toyDatabase(url), leaseMs: 60_000 });
    await guard.run({ subject: "o", identity: "e1", position: positionFromNumber(1) }, async () => "done");
    const listed = await state(["list", "--store", "toy", "--url", url, "--json"]);
    expect(listed.err).toBe("");
    const records = (JSON.parse(listed.out) as { records: { key: string; status: string }[] }).records;
    expect(records.map((r) => r.status)).toEqual(["done"]);
    const missing = await state(["list", "--store", "toy"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/--store toy needs --url/);
  });
});
