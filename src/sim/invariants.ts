import type { GuardOutcomeStatus, OUTCOMES } from "../core/outcomes.js";
import { positionBefore } from "../core/position.js";
import type { Backend } from "./backend.js";
import { checkHostileKeys } from "./hostile-keys.js";
import type { HistoryObserver } from "./observer.js";
import type { SimDelivery } from "./sim-delivery.js";
import type { SimEvent } from "./sim-event.js";

export interface FinalInput {
  observer: HistoryObserver;
  backend: Backend;
  events: SimEvent[];
  deliveries: SimDelivery[];
  /** Every worker drained the queue (no caps hit). */
  completed: boolean;
  /** Events whose message went to the dead-letter queue: delivery did not continue until acknowledged. */
  dlq: number[];
  keys: string[];
  sinkSubjects: string[];
  /** Events whose every commit the engine refuses (foreign-values.ts checks them): never applied, by design. */
  refused?: ReadonlySet<number>;
}

/** What the counters say was committed: each event's count, and the newest committed position per subject. */
interface Committed {
  counts: Map<number, number>;
  newest: Map<string, string>;
}

/**
 * The invariants checked after a history, from the stores' own contents (counters, sink rows, state items) and the
 * outcomes the workers saw. The ones that need timing (I3, I6, and sampled I2/I7) are checked by the observer.
 */
export async function checkFinal(f: FinalInput): Promise<void> {
  const c = await readCommitted(f);
  if (f.completed) {
    checkExactlyOnce(f, c);
    checkAcknowledged(f, c);
  }
  await checkSinks(f, c);
  await checkDedupeItems(f, c);
  checkHostileKeys(f, c.counts);
}

/** Reads every event's counter; I1 at most once (fencing guarantees it whatever the clocks). */
async function readCommitted(f: FinalInput): Promise<Committed> {
  const counts = new Map<number, number>();
  for (const e of f.events) {
    const c = await f.backend.readCounter(e);
    counts.set(e.index, c.count);
    if (c.count > 1)
      f.observer.violate(
        "I1",
        true,
        `${e.subject}/${e.identity} applied ${c.count} times (fences ${c.fences.join(", ")})`,
      );
  }
  const newest = new Map<string, string>();
  for (const e of f.events)
    if (e.position !== undefined && (counts.get(e.index) ?? 0) >= 1) {
      const n = newest.get(e.subject);
      if (n === undefined || positionBefore(n, e.position)) newest.set(e.subject, e.position);
    }
  return { counts, newest };
}

function committed(c: Committed, e: SimEvent): boolean {
  return (c.counts.get(e.index) ?? 0) >= 1;
}

function newerCommitted(c: Committed, e: SimEvent): boolean {
  const n = c.newest.get(e.subject);
  return e.position !== undefined && n !== undefined && positionBefore(e.position, n);
}

/** I1, exactly once, for events delivered until acknowledged (an ordered one may be skipped for a newer one). */
function checkExactlyOnce(f: FinalInput, c: Committed): void {
  for (const e of f.events) {
    if (f.refused?.has(e.index)) continue;
    if (e.malformed) continue; // checkHostileKeys: refused, never applied
    if (f.dlq.includes(e.index)) {
      f.observer.violate("I4", false, `${e.subject}/${e.identity} dead-lettered: never acknowledged`);
      continue;
    }
    if (!committed(c, e) && !newerCommitted(c, e))
      f.observer.violate(
        "I1",
        false,
        `${e.subject}/${e.identity} never applied${e.position !== undefined ? " and no newer event committed" : ""}`,
      );
  }
}

/** The guard statuses the outcome table acknowledges: a new one does not compile until it says what backs it. */
type AcknowledgedStatus = {
  [S in GuardOutcomeStatus]: (typeof OUTCOMES)[S]["acknowledged"] extends true ? S : never;
}[GuardOutcomeStatus];

/** What must have committed for an acknowledged status to be true: this event, a newer one, or either. */
const ACKNOWLEDGED_BY: Record<AcknowledgedStatus, "this" | "newer" | "either"> = {
  processed: "this",
  duplicate: "this",
  stale: "newer",
  "lease-lost": "either",
};

/** I4: acknowledged only what someone committed (this event, or a newer one of its subject). */
function checkAcknowledged(f: FinalInput, c: Committed): void {
  // Events processed with every write stale: their commit landed without its effect (inline state keeps the counter
  // in the row, whose newer work refused it), so their duplicates are backed by the newer work, as they were.
  const superseded = new Set(f.deliveries.filter((d) => d.superseded).map((d) => d.event));
  for (const d of f.deliveries) {
    if (!d.acknowledged || d.status === "malformed") continue; // malformed: checkHostileKeys
    const e = f.events[d.event] as SimEvent;
    // Processed with every write stale: its targets hold newer work, which must have committed (or this did).
    const by =
      d.superseded || (d.status === "duplicate" && superseded.has(d.event))
        ? "either"
        : ACKNOWLEDGED_BY[d.status as AcknowledgedStatus];
    const ok =
      (by !== "newer" && committed(c, e)) || (by !== "this" && by !== undefined && newerCommitted(c, e));
    if (!ok)
      f.observer.violate(
        "I4",
        false,
        `w${d.worker} call ${d.call}: ${e.subject}/${e.identity} acknowledged as ${d.status}, but nothing committed it`,
      );
  }
}

/** I2 at the end: the state's committed position and the sink row are the newest committed event. */
async function checkSinks(f: FinalInput, c: Committed): Promise<void> {
  const { observer, backend } = f;
  for (const subject of f.sinkSubjects) {
    const n = c.newest.get(subject);
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
    const key = f.events.find((e) => e.subject === subject)?.key as string;
    const { state } = await backend.readState(key);
    if (state?.committedPosition !== n)
      observer.violate(
        "I2",
        true,
        `state ${key} says committed ${state?.committedPosition ?? "nothing"}, counters say ${n}`,
      );
  }
}

/**
 * I2 for dedupe-only events: a committed one's item says done. I4 per state key: an acknowledged one's own item
 * (inline state: its own row) holds its commit, not another event's (a row shared by two state keys loses one).
 */
async function checkDedupeItems(f: FinalInput, c: Committed): Promise<void> {
  const acknowledged = new Set(f.deliveries.filter((d) => d.acknowledged).map((d) => d.event));
  for (const e of f.events) {
    if (e.position !== undefined || !committed(c, e)) continue;
    const { state } = await f.backend.readState(e.key);
    if (state?.status !== "done")
      f.observer.violate(
        "I2",
        true,
        `dedupe item ${e.key} is ${state?.status ?? "gone"} after its event committed`,
      );
    else if (acknowledged.has(e.index) && state.committedIdentity !== e.identity)
      f.observer.violate(
        "I4",
        true,
        `${e.subject}/${e.identity} acknowledged, but its item ${e.key} holds the commit of ${state.committedIdentity}`,
      );
  }
}
