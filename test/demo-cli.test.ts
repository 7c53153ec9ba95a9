import { describe, expect, inject, it } from "vitest";
import { eonce } from "./local/cli-helpers.js";

// The JSON shape of `eonce demo --json` is checked on the installed package (test/consumer.test.ts).
describe("eonce demo", () => {
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
