import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, inject, it } from "vitest";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { runCampaign } from "../../src/sim/campaign.js";

const HISTORIES = 100;

describe("fault simulator: seeded histories on DynamoDB Local", () => {
  it(`${HISTORIES} histories break no invariant`, async () => {
    const started = Date.now();
    const s = await runCampaign({
      histories: HISTORIES,
      seed: 1,
      engine: "dynamodb",
      endpoint: inject("dynamodbEndpoint"),
    });
    console.log(
      `chaos dynamodb: ${JSON.stringify({ ...s, failures: undefined })} in ${Date.now() - started}ms`,
    );
    expect(s.histories).toBe(HISTORIES);
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of ["fail-before", "lose-response", "delay", "hang", "pause", "duplicate"] as const)
      expect(s.faults[k], k).toBeGreaterThan(5);
  }, 180_000);
});

describe("a run on a DynamoDB endpoint it was given", () => {
  it("deletes its tables at its end", async () => {
    const endpoint = inject("dynamodbEndpoint");
    const client = dynamoDBClient(endpoint);
    const names = async () => (await client.send(new ListTablesCommand({}))).TableNames ?? [];
    const before = new Set(await names());
    // The tables that appeared while the campaign ran (listed after its first history, while it still runs): its own,
    // and those of a campaign another file runs beside it on the same DynamoDB Local (removed when that one ends).
    let listing: Promise<string[]> | undefined;
    const s = await runCampaign({
      histories: 2,
      seed: 1,
      engine: "dynamodb",
      inline: true,
      endpoint,
      concurrency: 1,
      onProgress: () => {
        listing ??= names();
      },
    });
    const during = new Set((await listing)?.filter((n) => n.startsWith("chaos-") && !before.has(n)));
    expect(s.histories).toBe(2);
    expect(during.size).toBeGreaterThan(0);
    await expect
      .poll(async () => (await names()).filter((n) => during.has(n)), { timeout: 60_000, interval: 1_000 })
      .toEqual([]);
    client.destroy();
  }, 120_000);
});
