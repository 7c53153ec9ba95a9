import type { Message, Receipt, Source } from "./source.js";

/**
 * One receive of an SQS batch from the history's queue (source.ts), as Lambda's event source mapping polls: up to
 * `max` visible messages. On a FIFO queue a message is taken only after every earlier message of its group is in
 * this batch (a group whose earliest message is in flight or waiting for its redelivery is closed), so a group's
 * messages arrive in order, one batch at a time, as many of one group together as there are; on a standard queue
 * any visible message, in any order. The
 * chooser picks which and how many; duplicates are added as `Source.receive` adds them.
 */
export function receiveBatch(
  source: Source,
  max: number,
  groupOf: ((m: Message) => string) | undefined,
): Receipt[] | { waitMs: number } | "done" {
  const { messages, sim, chooser, faults, o } = source;
  if (messages.length === 0) return "done";
  const now = sim.now;
  const size = chooser.int(1, max);
  const taken = new Set<Message>();
  let last: Message | undefined;
  for (;;) {
    const open = candidates(messages, taken, groupOf).filter((m) => m.visibleAt <= now);
    if (open.length === 0 || taken.size >= size) break;
    // FIFO: as many messages of one group as there are, as SQS returns them.
    const same = last && groupOf ? open.find((m) => groupOf(m) === groupOf(last as Message)) : undefined;
    last = same ?? (open[chooser.choose(open.length, "receive")] as Message);
    taken.add(last);
  }
  if (taken.size === 0) {
    const next = candidates(messages, taken, groupOf).map((m) => m.visibleAt);
    return { waitMs: Math.max(1, Math.min(...next) - now) };
  }
  return [...taken].map((m) => {
    m.receives++;
    m.visibleAt = now + o.visibilityMs;
    if (chooser.chance(faults.config.duplicateRate)) {
      faults.count("duplicate");
      source.send(m.event, chooser.int(0, o.visibilityMs));
    }
    return { message: m, receive: m.receives, deadline: now + o.visibilityMs };
  });
}

/** Each group's first message not yet taken (standard queue: every message not taken). */
function candidates(
  messages: readonly Message[],
  taken: ReadonlySet<Message>,
  groupOf: ((m: Message) => string) | undefined,
): Message[] {
  const rest = messages.filter((m) => !taken.has(m));
  if (!groupOf) return rest;
  const firsts = new Map<string, Message>();
  for (const m of rest) if (!firsts.has(groupOf(m))) firsts.set(groupOf(m), m);
  return [...firsts.values()];
}
