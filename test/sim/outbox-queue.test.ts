import { describe, expect, it } from "vitest";
import { randomChooser } from "../../src/sim/chooser.js";
import { HistoryFaultInjector, NO_HISTORY_FAULTS } from "../../src/sim/faults.js";
import { DEDUPE_WINDOW_MS } from "../../src/sim/outbox-config.js";
import { type QueueReceipt, SimQueue } from "../../src/sim/outbox-queue.js";
import { VirtualScheduler } from "../../src/sim/virtual-time.js";

/** The outbox histories' destination (src/sim/outbox-queue.ts): FIFO order per group and the deduplication window. */
function queue(fifo: boolean) {
  const chooser = randomChooser(1);
  const sim = new VirtualScheduler(chooser);
  const faults = new HistoryFaultInjector(NO_HISTORY_FAULTS, chooser, false);
  const q = new SimQueue(sim, chooser, faults, {
    fifo,
    visibilityMs: 1000,
    retryDelayMs: [10, 10],
    maxReceives: 3,
    duplicateRate: 0,
  });
  const send = (messageId: string, groupId = "g") =>
    q.send({ messageId, body: messageId, subject: groupId, groupId }, "test");
  const take = () => {
    const r = q.receive();
    if (typeof r === "string" || "waitMs" in r) throw new Error(`nothing to receive: ${JSON.stringify(r)}`);
    return r;
  };
  return { q, sim, send, take };
}

describe("the outbox histories' queue", () => {
  it("FIFO: drops a resend within 5 minutes of the enqueued one, delivers one after them again", () => {
    const { q, sim, send, take } = queue(true);
    send("a");
    sim.now += DEDUPE_WINDOW_MS - 1;
    send("a");
    expect(q.sends.map((s) => s.enqueued)).toEqual([true, false]);
    q.ack(take());
    expect(q.receive()).toBe("empty");
    sim.now += 1;
    send("a");
    expect(q.sends.map((s) => s.enqueued)).toEqual([true, false, true]);
    expect(take().message.messageId).toBe("a");
  });

  it("FIFO: a group's next message waits until its first is deleted, and comes after its redelivery", () => {
    const { q, sim, send, take } = queue(true);
    send("a");
    send("b");
    send("x", "other");
    const first: QueueReceipt[] = [];
    for (let i = 0; i < 2; i++) first.push(take());
    expect(first.map((r) => r.message.messageId).sort()).toEqual(["a", "x"]);
    expect(q.receive()).toEqual({ waitMs: 1000 });
    q.nack(first.find((r) => r.message.messageId === "a") as QueueReceipt);
    sim.now += 10;
    const again = take();
    expect(again.message.messageId).toBe("a");
    q.ack(again);
    expect(take().message.messageId).toBe("b");
    expect(q.firstReceived.filter((id) => id !== "x")).toEqual(["a", "b"]);
  });

  it("standard: no deduplication, and closes once empty", () => {
    const { q, send, take } = queue(false);
    send("a");
    send("a");
    expect(q.sends.every((s) => s.enqueued)).toBe(true);
    q.ack(take());
    q.ack(take());
    expect(q.receive()).toBe("empty");
    q.close();
    expect(q.receive()).toBe("done");
  });
});
