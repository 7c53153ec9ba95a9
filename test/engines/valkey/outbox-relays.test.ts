import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGuard, type Guard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import { escapeTag, outboxHintRedisKey } from "../../../src/engines/valkey/keys.js";
import { ValkeyOutbox } from "../../../src/engines/valkey/outbox.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { outboxMessageId, outboxOrder } from "../../../src/outbox/message-id.js";
import { type RunningRelay, startOutboxRelay } from "../../../src/outbox/relay.js";
import type { ClaimedEntry, OutboxEntry, OutboxSender } from "../../../src/outbox/types.js";
import { deleteKeys, testClient, testPrefix } from "./harness.js";

/**
 * Several relays, each on a connection of its own, over many committed entries of many subjects: every entry is
 * sent, a subject's entries in commit order, and an entry is sent twice only after the lease of its first send ran
 * out, under the same message id. Entries whose commit's discovery hint was lost are found by the sweep.
 */

const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/relays" } as const;
const LEASE_MS = 250;

interface Send {
  entry: ClaimedEntry;
  relay: number;
  startMs: number;
  start: number;
  end?: number;
}

describe("valkey outbox: relays racing", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let guard: Guard;
  const relayClients: Redis[] = [];
  let step = 0;
  const sends: Send[] = [];

  /** Relay `relay`'s sender: records each send's start and end; relay 0 stalls past its lease now and then. */
  function sender(relay: number): OutboxSender {
    let n = 0;
    return {
      async send(entry) {
        const s: Send = { entry: entry as ClaimedEntry, relay, startMs: Date.now(), start: ++step };
        sends.push(s);
        if (relay === 0 && ++n % 7 === 0) await new Promise((r) => setTimeout(r, LEASE_MS * 2));
        s.end = ++step;
      },
    };
  }

  function startRelays(count: number, sweepIntervalMs: number): RunningRelay[] {
    return Array.from({ length: count }, (_, relay) => {
      const readerClient = testClient();
      relayClients.push(readerClient);
      return startOutboxRelay({
        reader: new ValkeyOutbox({ store, readerClient, sweepIntervalMs }),
        sender: sender(relay),
        owner: `relay-${relay}`,
        batchSize: 5,
        leaseMs: LEASE_MS,
        pollIntervalMs: 10,
      });
    });
  }

  async function until(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > end) throw new Error("timed out");
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
    guard = createGuard({ store, outbox: new ValkeyOutbox({ store }), leaseMs: 5_000 });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await Promise.all([client, ...relayClients].map((c) => c.quit()));
  });

  it("sends every entry, each subject's in order, again only after a lease ran out and under the same id", async () => {
    const subjects = Array.from({ length: 30 }, (_, i) => `order-${i}`);
    const EVENTS = 6;
    const expected = new Map<string, string[]>(); // subject -> message ids in commit order
    await Promise.all(
      subjects.map(async (subject) => {
        const ids: string[] = [];
        for (let e = 1; e <= EVENTS; e++) {
          const r = await guard.run(
            { subject, identity: `e${e}`, position: positionFromNumber(e) },
            async (ctx) => {
              ids.push(ctx.publish(QUEUE, { subject, e, m: 1 }), ctx.publish(QUEUE, { subject, e, m: 2 }));
            },
          );
          expect(r.status).toBe("processed");
        }
        expected.set(subject, ids);
      }),
    );
    // A third of the subjects' commits lost their hints (the store's SADD after the commit did not happen): only
    // the relays' first sweep finds them.
    const lost = subjects.filter((_, i) => i % 3 === 0).map((s) => escapeTag(stateKey(s, "e1", true)));
    expect(await client.srem(outboxHintRedisKey(prefix), ...lost)).toBe(lost.length);

    const relays = startRelays(4, 60_000);
    const all = [...expected.values()].flat();
    const reader = new ValkeyOutbox({ store });
    try {
      await until(async () => {
        const sent = new Set(sends.filter((s) => s.end !== undefined).map((s) => s.entry.messageId));
        return all.every((id) => sent.has(id)) && (await reader.pending()).length === 0;
      }, 30_000);
    } finally {
      await Promise.all(relays.map((r) => r.stop()));
    }

    for (const [subject, ids] of expected) {
      const mine = sends.filter((s) => s.entry.subject === subject);
      // In order: each entry's first send starts after a send of the entry before it ended.
      const first = ids.map((id) => mine.find((s) => s.entry.messageId === id) as Send);
      expect(first.every((s) => s !== undefined)).toBe(true);
      for (let k = 1; k < ids.length; k++) {
        const endsBefore = mine.filter((s) => s.entry.messageId === ids[k - 1] && s.end !== undefined);
        expect(Math.min(...endsBefore.map((s) => s.end as number))).toBeLessThan(first[k]?.start as number);
      }
    }
    // Claimed again only once the lease before had run out, by the clock of the relay that claimed it again (its
    // claim's time is its lease's end less LEASE_MS; the send itself may start later, on a loaded machine after
    // another relay's), and sent with the same id and message.
    const byId = new Map<string, Send[]>();
    for (const s of sends) byId.set(s.entry.messageId, [...(byId.get(s.entry.messageId) ?? []), s]);
    let duplicates = 0;
    for (const [id, copies] of byId) {
      expect(all).toContain(id);
      copies.sort((a, b) => a.entry.leaseUntilMs - b.entry.leaseUntilMs);
      for (let k = 1; k < copies.length; k++) {
        const [before, again] = [copies[k - 1] as Send, copies[k] as Send];
        duplicates++;
        expect(again.entry.leaseUntilMs - LEASE_MS).toBeGreaterThanOrEqual(before.entry.leaseUntilMs);
        expect(again.entry.body).toBe(before.entry.body);
      }
    }
    // Relay 0's stalls outlived its leases: some entries were sent twice (the check above is not vacuous).
    expect(duplicates).toBeGreaterThan(0);
    expect(sends.length).toBe(all.length + duplicates);
  }, 60_000);

  it("finds an entry whose commit's hint was lost by the periodic sweep, while relays run", async () => {
    const relays = startRelays(2, 200);
    try {
      await Promise.all(relays.map((r) => r.drained()));
      // The commit's own write, without the store's hint after it: as a commit whose hint write failed.
      const subject = `lost-${Date.now()}`;
      const key = stateKey(subject, "x", true);
      const entry: OutboxEntry = {
        messageId: outboxMessageId(subject, "x", "#1"),
        subject,
        order: outboxOrder(7, 0),
        destination: QUEUE,
        body: "found",
        groupId: subject,
        createdAtMs: Date.now(),
      };
      const write = new ValkeyOutbox({ store }).entryWrite(entry, key);
      await client.zadd(write.key, write.args[0], write.args[1]);
      expect(await client.sismember(outboxHintRedisKey(prefix), escapeTag(key))).toBe(0);
      await until(
        () => sends.some((s) => s.entry.messageId === entry.messageId && s.end !== undefined),
        5_000,
      );
      const sent = sends.find((s) => s.entry.messageId === entry.messageId);
      expect(sent?.entry).toMatchObject(entry);
      await until(async () => (await client.zcard(write.key)) === 0, 5_000);
    } finally {
      await Promise.all(relays.map((r) => r.stop()));
    }
  }, 20_000);
});
