import { outboxMessageId } from "../outbox/message-id.js";
import type { OutboxEntry, OutboxReader } from "../outbox/types.js";
import type { QueueSend } from "./outbox-queue.js";
import { short } from "./outbox-relay.js";
import { type PlannedMessage, parseBody, type RunningOutboxHistory } from "./running-outbox-history.js";
import type { SimEvent } from "./sim-event.js";

/** What the outbox checks read at the end: the upstream commits, the consumers' counts, the outbox's pending. */
interface Facts {
  /**
   * Each upstream event's committed fence, undefined when it never committed: its commit as the store answered it
   * (the observer's), whatever its folded writes did (inline state: a commit whose row write newer work refused
   * still publishes).
   */
  committed: Map<number, number | undefined>;
  /** Each planned message's (and each stray's) consumer effect count and the fence that applied it first. */
  consumedCount: Map<string, { count: number; fence: number | undefined }>;
  pending: OutboxEntry[];
  completed: boolean;
}

/**
 * The outbox's invariants after a history, one checker each (src/core/invariants.ts O1–O5), from the queue's
 * record of every send and first receive, the consumers' counters and bodies, the upstream counters and the
 * outbox's unsent entries. `completed`: every worker, relay and consumer ran to its end (the liveness halves).
 */
export async function checkOutbox(
  o: RunningOutboxHistory,
  reader: OutboxReader,
  completed: boolean,
): Promise<void> {
  const { history } = o;
  const committed = new Map<number, number | undefined>();
  for (const e of history.events) {
    const fences = history.observer.commitsOf(e.key, e.identity);
    // Two commits of one event are I1's to report: the messages are checked against the first.
    committed.set(e.index, fences.length > 0 ? Math.min(...fences) : undefined);
  }
  const consumedCount = new Map<string, { count: number; fence: number | undefined }>();
  for (const [id, m] of [...o.planned, ...[...o.strays].map(([id, s]) => [id, s] as const)]) {
    const c = await history.backend.readCounter(m.target);
    consumedCount.set(id, { count: c.count, fence: c.fences[0] });
  }
  const pending = await history.sim.track(() => reader.pending());
  const f: Facts = { committed, consumedCount, pending, completed };
  publishedOnce(o, f);
  committedOnly(o, f);
  stableIds(o);
  commitOrder(o, f);
  drained(o, f);
}

/** The sends of each message id, in order. */
function sendsById(sends: readonly QueueSend[]): Map<string, QueueSend[]> {
  const by = new Map<string, QueueSend[]>();
  for (const s of sends) by.set(s.messageId, [...(by.get(s.messageId) ?? []), s]);
  return by;
}

/** An event's names, long ones cut (the simulator's subjects run to 1,500 characters). */
function eventName(e: SimEvent | undefined): string {
  const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…(${s.length})` : s);
  return e ? `${clip(e.subject)}/${clip(e.identity)}` : "an unknown event";
}

function described(o: RunningOutboxHistory, m: PlannedMessage): string {
  return `message ${m.name} (${short(m.id)}) of ${eventName(o.history.events[m.event])}`;
}

/**
 * O1: every message of a committed event is sent at least once and consumed exactly once (its counter, and those of
 * strays carrying it, add up to 1); at most once whatever happened (fencing: the consumer's guard).
 */
function publishedOnce(o: RunningOutboxHistory, f: Facts): void {
  const { observer } = o.history;
  // A message sent under another id (a broken relay's) is still sent, and its consumption counts.
  const plannedOf = (body: string) => {
    const b = parseBody(body);
    return b && o.plan.get(b.e)?.find((x) => x.name === b.m);
  };
  const sent = new Set(o.queue.sends.map((s) => plannedOf(s.body)?.id ?? s.messageId));
  const strayCounts = new Map<string, number>();
  for (const [id, s] of o.strays) {
    const m = plannedOf(s.body);
    if (m) strayCounts.set(m.id, (strayCounts.get(m.id) ?? 0) + (f.consumedCount.get(id)?.count ?? 0));
  }
  for (const [event, messages] of o.plan) {
    if (f.committed.get(event) === undefined) continue;
    for (const m of messages) {
      const count = (f.consumedCount.get(m.id)?.count ?? 0) + (strayCounts.get(m.id) ?? 0);
      if (count > 1) observer.violate("O1", true, `${described(o, m)} consumed ${count} times`);
      if (!f.completed) continue;
      if (!sent.has(m.id)) observer.violate("O1", false, `${described(o, m)} committed, never sent`);
      else if (count === 0)
        observer.violate(
          "O1",
          false,
          `${described(o, m)} sent, never consumed${o.queue.dlq.includes(m.id) ? " (dead-lettered)" : ""}`,
        );
    }
  }
}

/**
 * O2: every send, every unsent entry and every consumed message is the message of a committed run: its event
 * committed, with the fence its body says; a message of an event that never committed is never consumed.
 */
function committedOnly(o: RunningOutboxHistory, f: Facts): void {
  const { observer, events } = o.history;
  const check = (what: string, body: string) => {
    const b = parseBody(body);
    if (!b) return; // stableIds says what is wrong with it
    const at = f.committed.get(b.e);
    if (at === undefined) observer.violate("O2", true, `${what}: ${eventName(events[b.e])} never committed`);
    else if (at !== b.f)
      observer.violate(
        "O2",
        true,
        `${what}: the message of run f${b.f}, but ${eventName(events[b.e])} committed f${at}`,
      );
  };
  for (const s of o.queue.sends) check(`${short(s.messageId)} sent by ${s.by}`, s.body);
  for (const e of f.pending) check(`unsent entry ${short(e.messageId)}`, e.body);
  for (const [id, m] of o.planned) {
    const c = f.consumedCount.get(id);
    if (!c || c.count === 0) continue;
    const body = o.consumed.get(`${id}|${c.fence}`);
    if (f.committed.get(m.event) === undefined)
      observer.violate("O2", true, `${described(o, m)} consumed, though its event never committed`);
    else if (body !== undefined) check(`${described(o, m)} as consumed`, body);
  }
}

/**
 * O3: every send carries the id its message derives from (its event and name), as `ctx.publish` returned it at the
 * commit, and one id is one message (every send of it the same body, subject and group).
 */
function stableIds(o: RunningOutboxHistory): void {
  const { observer, events } = o.history;
  for (const s of o.queue.sends) {
    const b = parseBody(s.body);
    const e = b ? events[b.e] : undefined;
    if (!b || !e) {
      observer.violate(
        "O3",
        true,
        `${short(s.messageId)} sent by ${s.by} with a body of no event: ${s.body}`,
      );
      continue;
    }
    const id = outboxMessageId(e.subject, e.identity, b.m);
    if (s.messageId !== id)
      observer.violate(
        "O3",
        true,
        `message ${b.m} of ${eventName(e)} sent by ${s.by} as ${s.messageId}, not ${id}`,
      );
    else if (s.subject !== e.subject || s.groupId !== e.subject)
      observer.violate(
        "O3",
        true,
        `${short(id)} sent by ${s.by} under subject ${s.subject}, group ${s.groupId}`,
      );
  }
  for (const [id, sends] of sendsById(o.queue.sends)) {
    const bodies = new Set(sends.map((s) => s.body));
    if (bodies.size > 1)
      observer.violate(
        "O3",
        true,
        `${short(id)} sent as ${bodies.size} different messages: ${[...bodies].join(" / ")}`,
      );
  }
}

/**
 * O4: a subject's messages are first sent in commit order (the relay sends a subject's next entry only once its
 * previous one is marked, after a send), and on a FIFO queue first received in it. Commit order is the fence's and
 * then the place among the run's publishes: across events only on an ordered subject, whose commits one state key
 * serializes (events without a position on one subject commit on keys of their own, in any order).
 */
function commitOrder(o: RunningOutboxHistory, f: Facts): void {
  const { events } = o.history;
  const chains = new Map<string, { m: PlannedMessage; fence: number }[]>();
  for (const [event, messages] of o.plan) {
    const fence = f.committed.get(event);
    const e = events[event];
    if (fence === undefined || !e) continue;
    const chain = e.position !== undefined ? `subject ${e.subject}` : `event ${eventName(e)}`;
    chains.set(chain, [...(chains.get(chain) ?? []), ...messages.map((m) => ({ m, fence }))]);
  }
  const firstSent = firstIndex(o.queue.sends.map((s) => s.messageId));
  const firstReceived = firstIndex(o.queue.firstReceived);
  for (const [chain, list] of chains) {
    list.sort((a, b) => a.fence - b.fence || a.m.index - b.m.index);
    inOrder(o, chain, list, firstSent, "sent");
    if (o.os.fifo) inOrder(o, chain, list, firstReceived, "received from the FIFO queue");
  }
}

function firstIndex(ids: readonly string[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const [i, id] of ids.entries()) if (!first.has(id)) first.set(id, i);
  return first;
}

function inOrder(
  o: RunningOutboxHistory,
  chain: string,
  list: readonly { m: PlannedMessage; fence: number }[],
  first: ReadonlyMap<string, number>,
  what: string,
): void {
  let last: { m: PlannedMessage; at: number } | undefined;
  for (const { m } of list) {
    const at = first.get(m.id);
    if (at === undefined) continue; // never sent: O1 says so
    if (last && at < last.at)
      o.history.observer.violate(
        "O4",
        true,
        `${chain}: ${described(o, m)} first ${what} before ${described(o, last.m)}, committed before it`,
      );
    last = { m, at };
  }
}

/** O5: the relays ran to quiescence, so nothing committed is left unsent. */
function drained(o: RunningOutboxHistory, f: Facts): void {
  if (!f.completed || f.pending.length === 0) return;
  o.history.observer.violate(
    "O5",
    false,
    `${f.pending.length} entries left unsent after the relays ran to quiescence: ${f.pending.map((e) => short(e.messageId)).join(" ")}`,
  );
}
