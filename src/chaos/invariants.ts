import { positionBefore } from "../core/position.js";
import type { Backend } from "./backend.js";
import type { Delivery, SimEvent } from "./history.js";
import type { Observer } from "./observer.js";

export interface FinalInput {
  observer: Observer;
  backend: Backend;
  events: SimEvent[];
  deliveries: Delivery[];
  /** Every worker drained the queue (no caps hit). */
  completed: boolean;
  /** Events whose message went to the dead-letter queue: delivery did not continue until acknowledged. */
  dlq: number[];
  keys: string[];
  sinkSubjects: string[];
}

/**
 * The invariants checked after a history, from the stores' own contents (counters, sink rows, state items) and the
 * outcomes the workers saw. The ones that need timing (I3, I6, and sampled I2/I7) are checked by the observer.
 */
export async function checkFinal(f: FinalInput): Promise<void> {
  const { observer, backend, events } = f;
  const counts = new Map<number, number>();
  for (const e of events) {
    const c = await backend.readCounter(e.counterId);
    counts.set(e.index, c.count);
    // I1, at most once: fencing guarantees it whatever the clocks.
    if (c.count > 1)
      observer.violate(
        "I1",
        true,
        `${e.subject}/${e.identity} applied ${c.count} times (fences ${c.fences.join(", ")})`,
      );
  }
  const committed = (e: SimEvent) => (counts.get(e.index) ?? 0) >= 1;
  const newest = new Map<string, string>();
  for (const e of events)
    if (e.position !== undefined && committed(e)) {
      const n = newest.get(e.subject);
      if (n === undefined || positionBefore(n, e.position)) newest.set(e.subject, e.position);
    }
  const newerCommitted = (e: SimEvent) => {
    const n = newest.get(e.subject);
    return e.position !== undefined && n !== undefined && positionBefore(e.position, n);
  };

  // I1, exactly once, for events delivered until acknowledged (an ordered one may be skipped for a newer one).
  if (f.completed) {
    for (const e of events) {
      if (f.dlq.includes(e.index)) {
        observer.violate("I4", false, `${e.subject}/${e.identity} dead-lettered: never acknowledged`);
        continue;
      }
      if (!committed(e) && !newerCommitted(e))
        observer.violate(
          "I1",
          false,
          `${e.subject}/${e.identity} never applied${e.position !== undefined ? " and no newer event committed" : ""}`,
        );
    }
  }

  // I4: acknowledged only what someone committed (this event, or a newer one of its subject).
  if (f.completed) {
    for (const d of f.deliveries) {
      if (!d.acknowledged) continue;
      const e = events[d.event] as SimEvent;
      const ok =
        d.status === "stale"
          ? newerCommitted(e)
          : d.status === "lease-lost"
            ? committed(e) || newerCommitted(e)
            : committed(e);
      if (!ok)
        observer.violate(
          "I4",
          false,
          `w${d.worker} call ${d.call}: ${e.subject}/${e.identity} acknowledged as ${d.status}, but nothing committed it`,
        );
    }
  }

  // I2 at the end: the state's committed position and the sink row are the newest committed event.
  for (const subject of f.sinkSubjects) {
    const n = newest.get(subject);
    if (n === undefined) continue;
    const row = await backend.readSink(subject);
    if (!row || positionBefore(row.pos, n))
      observer.violate(
        "I2",
        true,
        `sink ${subject} holds ${row?.pos ?? "nothing"}, behind the newest committed ${n}`,
      );
    else if (f.completed && row.pos !== n)
      observer.violate(
        "I2",
        false,
        `sink ${subject} holds ${row.pos}, which never committed (newest committed ${n})`,
      );
    const key = events.find((e) => e.subject === subject)?.key as string;
    const { state } = await backend.readState(key);
    if (state?.committedPosition !== n)
      observer.violate(
        "I2",
        true,
        `state ${key} says committed ${state?.committedPosition ?? "nothing"}, counters say ${n}`,
      );
  }
  for (const e of events) {
    if (e.position !== undefined || !committed(e)) continue;
    const { state } = await backend.readState(e.key);
    if (state?.status !== "done")
      observer.violate(
        "I2",
        true,
        `dedupe item ${e.key} is ${state?.status ?? "gone"} after its event committed`,
      );
  }
}
