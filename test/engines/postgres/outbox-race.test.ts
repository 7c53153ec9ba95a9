import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  InlinePostgresStore,
  migrate,
  migrateInline,
  OutboxTableMissingError,
  PostgresOutbox,
  PostgresStore,
} from "../../../src/engines/postgres/index.js";
import { startOutboxRelay } from "../../../src/outbox/relay.js";
import type { ClaimedEntry, OutboxReader, OutboxSender } from "../../../src/outbox/types.js";
import { createSinkTable, POSTGRES_URL, type TestDatabase, testDatabase } from "../../kit/postgres.js";

/**
 * Several relays (`startOutboxRelay`, each on a pool of its own, as in separate processes) race over many committed
 * entries: each entry is sent, a subject's entries in commit order, and an entry is sent twice only when the lease
 * of the relay that held it had run out (then under the same message id).
 */

const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/race" } as const;
const SUBJECTS = 24;
const EVENTS_PER_SUBJECT = 4;
const MESSAGES_PER_EVENT = 2;
const RELAYS = 4;

let db: TestDatabase;
const pools: pg.Pool[] = [];
beforeAll(async () => {
  db = await testDatabase();
  await migrate(db.pool, { schema: db.schema, outbox: true });
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await db?.close();
});

/** A reader on a pool of its own (a relay process), on the outbox table `table`. */
function readerOn(table: string): PostgresOutbox {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 3 });
  pools.push(pool);
  return new PostgresOutbox({ pool, schema: db.schema, table });
}

/** What the relays did, in one sequence: sends begun and ended, marks begun (those that answered true). */
type Step =
  | { kind: "send"; id: string; owner: string; leaseUntilMs: number; body: string; seq: number }
  | { kind: "sent"; id: string; seq: number }
  | { kind: "marked"; id: string; seq: number };

function recording(stall: (entry: ClaimedEntry, attempt: number) => number) {
  const steps: Step[] = [];
  const attempts = new Map<string, number>();
  let seq = 0;
  const sender: OutboxSender = {
    async send(e) {
      const entry = e as ClaimedEntry; // the relay sends the entries it claimed
      const attempt = (attempts.get(entry.messageId) ?? 0) + 1;
      attempts.set(entry.messageId, attempt);
      const { owner, leaseUntilMs, body } = entry;
      steps.push({ kind: "send", id: entry.messageId, owner, leaseUntilMs, body, seq: ++seq });
      const ms = stall(entry, attempt);
      if (ms > 0) await sleep(ms);
      steps.push({ kind: "sent", id: entry.messageId, seq: ++seq });
    },
  };
  /** `reader` with its successful marks recorded at the call (the update lands between the call and the answer). */
  const marking = (reader: OutboxReader): OutboxReader => ({
    claim: (req) => reader.claim(req),
    pending: () => reader.pending(),
    async markSent(entry, sentAtMs) {
      const at = ++seq;
      const ok = await reader.markSent(entry, sentAtMs);
      if (ok) steps.push({ kind: "marked", id: entry.messageId, seq: at });
      return ok;
    },
  });
  return { steps, sender, marking };
}

/** Commits SUBJECTS × EVENTS_PER_SUBJECT events of MESSAGES_PER_EVENT messages each; returns each subject's ids in order. */
async function commitEntries(outbox: PostgresOutbox, stateTable: string): Promise<string[][]> {
  const store = new PostgresStore({ pool: db.pool, schema: db.schema, table: stateTable });
  const guard = createGuard({ store, outbox, leaseMs: 10_000 });
  const prefix = randomUUID().slice(0, 8);
  return Promise.all(
    Array.from({ length: SUBJECTS }, async (_, s) => {
      const subject = `race-${prefix}-${s}`;
      const ids: string[] = [];
      for (let e = 0; e < EVENTS_PER_SUBJECT; e++) {
        const r = await guard.run(
          { subject, identity: `e${e}`, position: positionFromNumber(e + 1) },
          async (ctx) => {
            for (let m = 0; m < MESSAGES_PER_EVENT; m++) ids.push(ctx.publish(QUEUE, `${subject}/${e}/${m}`));
          },
        );
        expect(r.status).toBe("processed");
      }
      return ids;
    }),
  );
}

/** Runs RELAYS relays until the outbox has nothing pending, then stops them. */
async function race(
  table: string,
  rec: ReturnType<typeof recording>,
  options: { leaseMs: number; batchSize: number },
): Promise<void> {
  const readers = Array.from({ length: RELAYS }, () => readerOn(table));
  const relays = readers.map((reader, i) =>
    startOutboxRelay({
      reader: rec.marking(reader),
      sender: rec.sender,
      owner: `relay-${i}`,
      pollIntervalMs: 5,
      ...options,
    }),
  );
  const deadline = Date.now() + 25_000;
  while ((await readers[0]!.pending()).length > 0) {
    if (Date.now() > deadline) throw new Error("the relays did not drain the outbox in 25 s");
    await sleep(20);
  }
  await Promise.all(relays.map((r) => r.stop()));
}

/**
 * The checks every race passes: each entry sent; a subject's entry first sent only after its predecessor was
 * marked sent (so never while the head is unsent, and in commit order); a second send of an entry only by a claim
 * made once the previous claim's lease had ended, with the same message.
 */
function checkRace(subjects: string[][], steps: Step[], leaseMs: number): { duplicates: number } {
  const sends = new Map<string, Extract<Step, { kind: "send" }>[]>();
  const firstMark = new Map<string, number>();
  for (const s of steps) {
    if (s.kind === "send") sends.set(s.id, [...(sends.get(s.id) ?? []), s]);
    if (s.kind === "marked") firstMark.set(s.id, Math.min(firstMark.get(s.id) ?? s.seq, s.seq));
  }
  let duplicates = 0;
  for (const ids of subjects) {
    for (const [k, id] of ids.entries()) {
      const mine = (sends.get(id) ?? []).sort((a, b) => a.seq - b.seq);
      expect(mine.length, `entry ${k} of its subject was sent`).toBeGreaterThan(0);
      if (k > 0) {
        const previousMarked = firstMark.get(ids[k - 1]!);
        expect(previousMarked, "the previous entry was marked sent").toBeDefined();
        expect(mine[0]!.seq, `entry ${k} was sent before entry ${k - 1} was marked`).toBeGreaterThan(
          previousMarked!,
        );
      }
      for (let i = 1; i < mine.length; i++) {
        const [before, again] = [mine[i - 1]!, mine[i]!];
        duplicates++;
        // The claim behind the second send was made at its lease's start: not before the first claim's lease ended.
        expect(again.leaseUntilMs - leaseMs).toBeGreaterThanOrEqual(before.leaseUntilMs);
        expect(again.body).toBe(before.body);
      }
    }
  }
  return { duplicates };
}

describe("postgres outbox: relays racing on separate pools", () => {
  it("sends every entry once, each subject's in commit order, with long leases", async () => {
    const outbox = new PostgresOutbox({ pool: db.pool, schema: db.schema });
    const subjects = await commitEntries(outbox, "eonce_state");
    const rec = recording(() => 0);
    await race("eonce_state_outbox", rec, { leaseMs: 30_000, batchSize: 8 });
    const { duplicates } = checkRace(subjects, rec.steps, 30_000);
    expect(duplicates).toBe(0);
    const sent = rec.steps.filter((s) => s.kind === "send");
    expect(sent).toHaveLength(SUBJECTS * EVENTS_PER_SUBJECT * MESSAGES_PER_EVENT);
    // Several relays took part (the race was a race).
    expect(new Set(sent.map((s) => (s.kind === "send" ? s.owner : ""))).size).toBeGreaterThan(1);
  });

  it("sends an entry again only after a stalled relay's lease ran out, under the same message id", async () => {
    await migrate(db.pool, { schema: db.schema, table: "stalls", outbox: true });
    const outbox = new PostgresOutbox({ pool: db.pool, schema: db.schema, stateTable: "stalls" });
    const subjects = await commitEntries(outbox, "stalls");
    const leaseMs = 250;
    // Every third entry's first send stalls past the lease: another relay takes it over and sends it again.
    const stalled = new Set(subjects.flat().filter((_, i) => i % 3 === 0));
    const rec = recording((e, attempt) => (attempt === 1 && stalled.has(e.messageId) ? leaseMs * 4 : 0));
    await race("stalls_outbox", rec, { leaseMs, batchSize: 4 });
    // Every duplicate's claim came after the previous claim's lease ended (checkRace): a slow send on a loaded
    // machine may also outlive its lease, so duplicates are not only the stalled ones; but those are sent twice.
    const { duplicates } = checkRace(subjects, rec.steps, leaseMs);
    expect(duplicates).toBeGreaterThan(0);
    const counts = new Map<string, number>();
    for (const s of rec.steps) if (s.kind === "send") counts.set(s.id, (counts.get(s.id) ?? 0) + 1);
    // Some stalled entries were taken over and sent again (how many depends on when the other relays poll: on a
    // loaded machine they may be busy with their own stalls until the first send ends and marks).
    const stalledTwice = [...stalled].filter((id) => (counts.get(id) ?? 0) > 1);
    expect(stalledTwice.length).toBeGreaterThan(0);
  });
});

describe("postgres outbox: tables, options, inline state", () => {
  it("migrateInline creates the inline table's outbox; a reader without its table fails with OutboxTableMissingError", async () => {
    await createSinkTable(db.pool, db.schema, "inline_rows");
    await migrateInline(db.pool, { schema: db.schema, table: "inline_rows", outbox: true });
    const inline = new PostgresOutbox({
      pool: db.pool,
      schema: db.schema,
      engine: "postgres-inline",
      stateTable: "inline_rows",
    });
    expect(await inline.pending()).toEqual([]);
    const missing = new PostgresOutbox({ pool: db.pool, schema: db.schema, table: "no_such_outbox" });
    await expect(missing.pending()).rejects.toBeInstanceOf(OutboxTableMissingError);
  });

  it("inline: a commit that publishes is one transaction, also when the store's functions are missing", async () => {
    // No server functions: the store's first call fails inside the transaction, which then runs with statements.
    await createSinkTable(db.pool, db.schema, "bare_rows");
    await migrateInline(db.pool, {
      schema: db.schema,
      table: "bare_rows",
      serverFunctions: false,
      outbox: true,
    });
    const store = new InlinePostgresStore({ pool: db.pool, schema: db.schema, table: "bare_rows" });
    const outbox = new PostgresOutbox({
      pool: db.pool,
      schema: db.schema,
      engine: "postgres-inline",
      stateTable: "bare_rows",
    });
    const guard = createGuard({ store, outbox, leaseMs: 5_000 });
    const subject = `inline-${randomUUID()}`;
    // apply first: the store's very first call is the one inside the transaction.
    const applied = await guard.apply({ subject, identity: "a", position: positionFromNumber(1) }, (ctx) => {
      ctx.atCommit(store.row(ctx, { value: "v" }));
      ctx.publish(QUEUE, "first");
    });
    expect(applied.status).toBe("processed");
    expect(applied.status === "processed" && applied.writes.map((w) => w.status)).toEqual([
      "applied",
      "applied",
    ]);
    const r = await guard.run({ subject, identity: "b", position: positionFromNumber(2) }, async (ctx) => {
      ctx.publish(QUEUE, "second");
    });
    expect(r.status).toBe("processed");
    const mine = (await outbox.pending()).filter((e) => e.subject === subject);
    expect(mine.map((e) => e.body)).toEqual(["first", "second"]);
    const row = await db.pool.query(`SELECT value FROM "${db.schema}".bare_rows WHERE strpos(pk, $1) > 0`, [
      subject,
    ]);
    expect(row.rows[0]?.value).toBe("v");
  });

  it("validates its options eagerly", () => {
    expect(() => new PostgresOutbox({ pool: db.pool, table: "bad name" })).toThrow(/plain SQL identifier/);
    expect(
      () => new PostgresOutbox({ pool: db.pool, engine: "dynamodb" as "postgres", schema: db.schema }),
    ).toThrow(/engine/);
    expect(() => new PostgresOutbox({ pool: db.pool, stateTable: "t".repeat(60) })).toThrow(/set table/);
  });
});
