import { describe, expect, inject, it } from "vitest";
import { eonce } from "./local/cli-helpers.js";

describe("eonce demo --json", () => {
  it("prints exactly the issue's JSON shape, one row per scenario and mode", async () => {
    const { code, stdout, stderr } = await eonce([
      "demo",
      "--json",
      "--scale",
      "0.15",
      "--scenario",
      "records,orders",
      "--seed",
      "4",
      "--dynamodb-endpoint",
      inject("dynamodbEndpoint"),
    ]);
    expect(code).toBe(0);
    const out = JSON.parse(stdout) as { scenarios: Record<string, unknown>[] };
    expect(Object.keys(out)).toEqual(["scenarios"]);
    expect(out.scenarios.map((s) => `${s.name}/${s.guard}`)).toEqual([
      "records/off",
      "records/on",
      "orders/off",
      "orders/on",
    ]);
    for (const s of out.scenarios) {
      expect(Object.keys(s)).toEqual([
        "name",
        "guard",
        "deliveries",
        "distinctEvents",
        "handlerRuns",
        "duplicateEffects",
        "staleResults",
        "lostEvents",
        "durationMs",
      ]);
      for (const k of Object.keys(s).slice(2)) expect(Number.isInteger(s[k])).toBe(true);
    }
    expect(stderr).toMatch(/wall time \d+\.\d s, seed 4/);
  }, 240_000);

  it("refuses an unknown scenario", async () => {
    const { code, stderr } = await eonce([
      "demo",
      "--scenario",
      "invoices",
      "--dynamodb-endpoint",
      inject("dynamodbEndpoint"),
    ]);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/unknown scenario "invoices"/);
  }, 60_000);
});
