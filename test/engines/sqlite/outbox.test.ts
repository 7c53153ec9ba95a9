import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { SqliteOutbox, SqliteStore } from "../../../src/engines/sqlite/index.js";

/** The SQLite outbox beyond the contract suite: its options, its table, removing sent entries. */

const dir = mkdtempSync(join(tmpdir(), "eonce-sqlite-outbox-"));
const filename = join(dir, "state.db");
const store = new SqliteStore({ filename, synchronous: "normal" });
afterAll(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});
const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/q" } as const;

describe("SqliteOutbox", () => {
  it("validates its options eagerly", () => {
    expect(() => new SqliteOutbox({ store: {} as SqliteStore })).toThrow(/SqliteStore/);
    expect(() => new SqliteOutbox({ store, tableName: "bad name" })).toThrow(/plain SQL identifier/);
    expect(() => new SqliteOutbox({ store, maxPending: 0 })).toThrow(/maxPending/);
    const long = new SqliteStore({ filename, tableName: "t".repeat(60) });
    try {
      expect(() => new SqliteOutbox({ store: long })).toThrow(/set tableName/);
    } finally {
      long.close();
    }
  });

  it("names its table after the store's, and deletes entries sent before a time", async () => {
    const outbox = new SqliteOutbox({ store });
    expect(outbox.tableName).toBe("eonce_state_outbox");
    const guard = createGuard({ store, outbox });
    for (const [i, subject] of ["a", "b"].entries()) {
      const r = await guard.run(
        { subject, identity: "x", position: positionFromNumber(i + 1) },
        async (ctx) => {
          ctx.publish(QUEUE, subject);
        },
      );
      expect(r.status).toBe("processed");
    }
    const claimed = await outbox.claim({ limit: 10, owner: "r", nowMs: 1_000, leaseUntilMs: 2_000 });
    expect(claimed.map((e) => e.body)).toEqual(["a", "b"]);
    expect(await outbox.markSent(claimed[0]!, 1_500)).toBe(true);
    expect(await outbox.markSent(claimed[1]!, 3_000)).toBe(true);
    expect(outbox.deleteSent(2_000)).toBe(1); // a's; b's was sent after
    expect(outbox.deleteSent(2_000)).toBe(0);
    expect(await outbox.pending()).toEqual([]);
  });
});
