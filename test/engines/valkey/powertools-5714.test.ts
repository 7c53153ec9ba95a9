import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteKeys, testClient, testPrefix } from "./harness.js";
import { oursStaleSnapshot, powertoolsStaleSnapshot } from "./powertools.js";

/** The installed Powertools cache layer's source: what the run below exercises. */
function powertoolsSource(): { version: string; cacheLayer: string } {
  const require = createRequire(import.meta.url);
  const main = require.resolve("@aws-lambda-powertools/idempotency");
  let dir = dirname(main);
  while (!dir.endsWith("idempotency")) dir = dirname(dir);
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  const cacheLayer = readFileSync(join(dir, "lib/esm/persistence/CachePersistenceLayer.js"), "utf8");
  return { version, cacheLayer };
}

/**
 * Powertools issue #5714, run for real against both: a slow caller C's in-progress record outlives its deadline
 * while C still runs; caller A reads it (an orphan, by its deadline), C completes, then A acts on what it read.
 * Powertools 2.35.0 (`_putRecord`: SET NX fails, GET, judged orphaned, an orphan lock, then an unconditional SET)
 * overwrites the completed record and runs the handler again; ours decides the claim in one script on the record as
 * it is when the claim arrives, and A is a duplicate.
 */
describe("the #5714 interleaving: a stale snapshot beside a completed record", () => {
  let client: Redis;
  let prefix: string;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("the installed Powertools is 2.35.0, and its orphan path still ends in an unconditional SET", () => {
    const { version, cacheLayer } = powertoolsSource();
    expect(version).toBe("2.35.0");
    // After the orphan lock, the record is SET with an expiry only: no NX, no compare with what was read.
    expect(cacheLayer).toMatch(
      /await this\.#acquireLock\(record\.idempotencyKey\);\s*await this\.#client\.set\(record\.idempotencyKey, encodedItem, \{\s*EX: ttl,\s*\}\);/,
    );
  });

  it("Powertools: A overwrites C's completed record with its in-progress one, and the effect runs twice", async () => {
    const run = await powertoolsStaleSnapshot(client, prefix);
    expect(run.snapshot).toBe("INPROGRESS, deadline past");
    // While A's handler ran, the record was A's in-progress one: C's COMPLETED record had been overwritten.
    expect(run.recordDuringA).toBe("INPROGRESS, deadline ahead");
    expect(run.outcomes).toEqual({ c: "processed", a: "processed", again: "duplicate" });
    expect(run.handlerRuns).toBe(2);
    expect(run.effects).toBe(2);
  });

  it("ours: A's claim is refused on C's committed record (duplicate), and the effect runs once", async () => {
    const run = await oursStaleSnapshot(client, prefix);
    // What A would have read: the same picture as Powertools' A had, a holder past its lease.
    expect(run.snapshot).toBe("running, lease past");
    expect(run.outcomes).toEqual({ c: "processed", a: "duplicate", again: "duplicate" });
    expect(run.handlerRuns).toBe(1);
    expect(run.effects).toBe(1);
  });
});
