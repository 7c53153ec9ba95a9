import { stateKey } from "../core/state-key.js";
import type { StateStore } from "../core/store.js";
import { outboxMessageId } from "../outbox/message-id.js";
import type { EffectTarget, SimOutbox } from "./backend.js";
import type { OutboxBreak } from "./broken.js";
import type { OutboxSettings } from "./outbox-config.js";
import type { SimQueue } from "./outbox-queue.js";
import type { RunningHistory } from "./running-history.js";

/** What the phases of one outbox history share (outbox-history.ts): the running guard history, the outbox's parts. */
export interface RunningOutboxHistory {
  readonly history: RunningHistory;
  /** The state store the guards share (each behind a fault decorator of its own), upstream and downstream. */
  readonly shared: StateStore;
  readonly os: OutboxSettings;
  readonly outbox: SimOutbox;
  readonly queue: SimQueue;
  readonly broken: OutboxBreak | undefined;
  /** Each event's messages, by event index (none for events refused as malformed). */
  readonly plan: ReadonlyMap<number, readonly PlannedMessage[]>;
  readonly planned: ReadonlyMap<string, PlannedMessage>;
  /** Messages under ids no event publishes (a broken relay's): their consumer's effect target and their body. */
  readonly strays: Map<string, { target: EffectTarget; body: string }>;
  /** The body each downstream run consumed, by `<message id>|<fence>`: the committed one's is read at the end. */
  readonly consumed: Map<string, string>;
  /** Upstream workers all done: no commit (so no entry) comes after. */
  upstreamDone(): boolean;
}

/** One message an event publishes in every run: its id, derived from the event and its name, fixed at the commit. */
export interface PlannedMessage {
  readonly id: string;
  readonly event: number;
  readonly index: number;
  /** The name given to `ctx.publish` (undefined: the default `#<n>`), and the name its id derives from. */
  readonly given: string | undefined;
  readonly name: string;
  /** The consumer's folded effect: a counter per message, in the state of its id (its subject and identity). */
  readonly target: EffectTarget;
}

/** The body a run publishes: its event, the message's name and the run's fence (a run's message told from another's). */
export interface MessageBody {
  e: number;
  m: string;
  f: number;
}

export function parseBody(body: string): MessageBody | undefined {
  try {
    const b = JSON.parse(body) as Partial<MessageBody>;
    return typeof b.e === "number" && typeof b.m === "string" && typeof b.f === "number"
      ? { e: b.e, m: b.m, f: b.f }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Each event publishes 1..`maxMessages` messages, each named or under the default name (`#1`, `#2`, … by its place
 * among the run's publishes): drawn once, so every run of the event publishes the same messages.
 */
export function planMessages(run: RunningHistory, maxMessages: number): Map<number, PlannedMessage[]> {
  const plan = new Map<number, PlannedMessage[]>();
  for (const e of run.events) {
    if (e.malformed) continue;
    const messages: PlannedMessage[] = [];
    const n = run.chooser.int(1, maxMessages);
    for (let index = 0; index < n; index++) {
      const given = run.chooser.chance(0.5) ? `n${index + 1}` : undefined;
      const name = given ?? `#${index + 1}`;
      const id = outboxMessageId(e.subject, e.identity, name);
      const target = withKey({ counterId: `${e.counterId}.m${index}`, subject: id, identity: id });
      messages.push({ id, event: e.index, index, given, name, target });
    }
    plan.set(e.index, messages);
  }
  return plan;
}

/** The consumer's state key for a message: an event without a position, named by the message id. */
export function withKey(t: Omit<EffectTarget, "key">): EffectTarget {
  return { ...t, key: stateKey(t.subject, t.identity, false) };
}
