import { describe, expect, it } from "vitest";
import { createGuard } from "../../src/core/guard.js";
import { positionFromNumber } from "../../src/core/position.js";
import { outboxMessageId } from "../../src/outbox/message-id.js";
import { relayOutbox } from "../../src/outbox/relay.js";
import type { OutboxEntry, OutboxReader, OutboxSender } from "../../src/outbox/types.js";
import { STORES, useStore } from "../kit/index.js";

/**
 * The outbox contract, on every engine: an entry exists if and only if its event committed; relays claim the head
 * of each subject's unsent entries, one relay at a time; a relay that lost its claim cannot mark the entry sent.
 */

const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/orders" } as const;
let n = 0;
const unique = (what: string) => `${what}-${Date.now().toString(36)}-${++n}`;

function recorder(): OutboxSender & { sent: OutboxEntry[] } {
  const sent: OutboxEntry[] = [];
  return { sent, send: async (e) => void sent.push(e) };
}

/** The entries of `subject` a reader still holds unsent. */
async function pendingOf(reader: OutboxReader, subject: string): Promise<OutboxEntry[]> {
  return (await reader.pending())
    .filter((e) => e.subject === subject)
    .sort((a, b) => (a.order < b.order ? -1 : 1));
}

for (const factory of STORES) {
  describe(`outbox contract: ${factory.name}`, () => {
    const s = useStore(factory);
    const outboxOf = () => {
      if (!s.outbox)
        throw new Error(`engine ${factory.name} has no outbox (test/engines/${factory.name}/under-test.ts)`);
      return s.outbox;
    };
    const guardOf = () => createGuard({ store: s.store, outbox: outboxOf().outbox, leaseMs: 5_000 });

    it("has an outbox", () => {
      expect(s.outbox?.outbox.engine).toBe(s.store.engine);
    });

    it("adds a run's messages with its commit, and none for a run that failed", async () => {
      const guard = guardOf();
      const reader = await outboxOf().reader();
      const subject = unique("order");
      const failed = await guard.run({ subject, identity: "a" }, async (ctx) => {
        ctx.publish(QUEUE, { order: subject, n: 0 });
        throw new Error("dies after publishing");
      });
      expect(failed.status).toBe("failed");
      expect(await pendingOf(reader, subject)).toEqual([]);

      let ids: string[] = [];
      const done = await guard.run({ subject, identity: "a" }, async (ctx) => {
        ids = [ctx.publish(QUEUE, { order: subject, n: 1 }), ctx.publish(QUEUE, "second", { name: "note" })];
        expect(await pendingOf(reader, subject)).toEqual([]); // not before the commit
        return "ok";
      });
      expect(done.status).toBe("processed");
      expect(ids).toEqual([outboxMessageId(subject, "a", "#1"), outboxMessageId(subject, "a", "note")]);
      const pending = await pendingOf(reader, subject);
      expect(pending.map((e) => e.messageId)).toEqual(ids);
      expect(pending.map((e) => e.body)).toEqual([JSON.stringify({ order: subject, n: 1 }), "second"]);
      expect(pending[0]).toMatchObject({ subject, groupId: subject, destination: QUEUE });

      const duplicate = await guard.run({ subject, identity: "a" }, async (ctx) => {
        ctx.publish(QUEUE, "never");
        return "again";
      });
      expect(duplicate.status).toBe("duplicate");
      expect(await pendingOf(reader, subject)).toHaveLength(2);
    });

    it("adds apply's messages with its one request", async () => {
      const guard = guardOf();
      const reader = await outboxOf().reader();
      const subject = unique("apply");
      const r = await guard.apply({ subject, identity: "b", position: positionFromNumber(3) }, (ctx) => {
        ctx.publish(QUEUE, { applied: true }, { attributes: { kind: "applied" } });
        return 1;
      });
      expect(r.status).toBe("processed");
      const [entry] = await pendingOf(reader, subject);
      expect(entry).toMatchObject({
        messageId: outboxMessageId(subject, "b", "#1"),
        attributes: { kind: "applied" },
      });
    });

    it("gives relays each subject's oldest unsent entry, one relay at a time", async () => {
      const guard = guardOf();
      const subject = unique("ordered");
      for (const [i, identity] of ["e1", "e2"].entries()) {
        const r = await guard.run({ subject, identity, position: positionFromNumber(i + 1) }, async (ctx) => {
          ctx.publish(QUEUE, identity);
        });
        expect(r.status).toBe("processed");
      }
      const a = await outboxOf().reader();
      const b = await outboxOf().reader();
      const nowMs = Date.now();
      const mine = <E extends { subject: string }>(entries: E[]) =>
        entries.filter((e) => e.subject === subject);
      const claimedByA = mine(
        await a.claim({ limit: 1000, owner: "relay-a", nowMs, leaseUntilMs: nowMs + 1_000 }),
      );
      expect(claimedByA.map((e) => e.body)).toEqual(["e1"]);
      // The head is held: relay b gets nothing of this subject, not even its second entry.
      expect(
        mine(await b.claim({ limit: 1000, owner: "relay-b", nowMs, leaseUntilMs: nowMs + 1_000 })),
      ).toEqual([]);
      // a's lease runs out (a died after sending): b takes the head over; a can no longer mark it.
      const later = nowMs + 2_000;
      const claimedByB = mine(
        await b.claim({ limit: 1000, owner: "relay-b", nowMs: later, leaseUntilMs: later + 1_000 }),
      );
      expect(claimedByB.map((e) => e.messageId)).toEqual(claimedByA.map((e) => e.messageId));
      expect(await a.markSent(claimedByA[0]!, later)).toBe(false);
      expect(await b.markSent(claimedByB[0]!, later)).toBe(true);
      expect(await b.markSent(claimedByB[0]!, later)).toBe(true); // marking again is answered alike
      const next = mine(
        await a.claim({ limit: 1000, owner: "relay-a", nowMs: later, leaseUntilMs: later + 1_000 }),
      );
      expect(next.map((e) => e.body)).toEqual(["e2"]);
      expect(await a.markSent(next[0]!, later)).toBe(true);
      expect(await pendingOf(a, subject)).toEqual([]);
    });

    it("publishes from an event whose subject is empty, as the guard takes one", async () => {
      const guard = guardOf();
      const identity = unique("empty-subject");
      const r = await guard.run({ subject: "", identity }, async (ctx) => void ctx.publish(QUEUE, identity));
      expect(r.status).toBe("processed");
      const id = outboxMessageId("", identity, "#1");
      const pending = await (await outboxOf().reader()).pending();
      expect(pending.filter((e) => e.messageId === id).map((e) => e.body)).toEqual([identity]);
    });

    it("relays every committed message once per round trip, under the id fixed at the commit", async () => {
      const guard = guardOf();
      const subjects = [unique("r"), unique("r"), unique("r")];
      for (const subject of subjects) {
        await guard.run({ subject, identity: "x" }, async (ctx) => void ctx.publish(QUEUE, subject));
      }
      const sender = recorder();
      const reader = await outboxOf().reader();
      for (let round = 0; round < 10; round++) {
        const r = await relayOutbox({ reader, sender, batchSize: 1000, owner: "relay-1" });
        if (r.claimed === 0) break;
      }
      const sent = sender.sent.filter((e) => subjects.includes(e.subject));
      expect(sent.map((e) => e.messageId).sort()).toEqual(
        subjects.map((s) => outboxMessageId(s, "x", "#1")).sort(),
      );
      for (const subject of subjects) expect(await pendingOf(reader, subject)).toEqual([]);
    });
  });
}
