import { INVARIANT_CATALOGUE, type InvariantId } from "../../core/invariants.js";
import { normalizeSequencer } from "../../core/position.js";
import { claimedAtMs } from "../../core/state-admin.js";
import { type Classified, gotThrough } from "./outcomes.js";
import { type ReadState, RUN_STATE_LIMIT, type RunState } from "./state.js";

/** One check of `eonce run`'s report (the invariants I1–I4, the durable checks D1–D3): a failed one fails the run. */
export interface RunCheck<Id extends string = string> {
  id: Id;
  title: string;
  status: "pass" | "fail" | "not checked";
  detail: string;
}

/**
 * One invariant check of `eonce run` (docs/local-runtime.md), made from outside the handler where possible; its id
 * is the catalogue's (src/core/invariants.ts), shared with the fault simulator.
 */
export type InvariantCheck = RunCheck<Extract<InvariantId, "I1" | "I2" | "I3" | "I4">>;

export interface CheckInputs {
  classified: Classified;
  /** Rows of the effects table (`--effects table:attribute`), with the attribute holding the event's sequencer. */
  effects?: { table: string; attribute: string; rows: Record<string, unknown>[] };
  /** The guard's state, read through its store's admin (`--state-store`, `--state-table`; state.ts). */
  state?: RunState;
  /** S3 runs: the input bucket (subjects are `bucket/key`). Message runs have none. */
  bucket?: string;
}

export function checkInvariants(inputs: CheckInputs): InvariantCheck[] {
  return [exactlyOnce(inputs), monotonic(inputs), liveness(inputs), nothingLost(inputs)];
}

function exactlyOnce({ classified, effects }: CheckInputs): InvariantCheck {
  const title = INVARIANT_CATALOGUE.I1.title;
  const problems: string[] = [];
  const evidence: string[] = [];
  const events = [...classified.perEvent.values()];
  if (classified.detailed) {
    const twice = events.filter((e) => e.outcomes.filter((o) => o === "processed").length > 1);
    evidence.push(
      `processed reported once or less for ${events.length - twice.length}/${events.length} events`,
    );
    if (twice.length > 0)
      problems.push(`${twice.length} event(s) reported processed more than once (${twice[0]?.key})`);
  }
  if (effects) {
    const counts = new Map<string, number>();
    for (const row of effects.rows) {
      // Own attributes only: the attribute name is a command-line argument (`constructor` is not a column).
      const v = String(Object.hasOwn(row, effects.attribute) ? row[effects.attribute] : undefined);
      counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const extra = events.filter((e) => (counts.get(e.sequencer ?? e.id) ?? 0) > 1);
    const none = events.filter((e) => (counts.get(e.sequencer ?? e.id) ?? 0) === 0);
    evidence.push(`${effects.table}: ${effects.rows.length} rows for ${events.length} events`);
    if (extra.length > 0)
      problems.push(`${extra.length} event(s) with more than one row in ${effects.table} (${extra[0]?.key})`);
    if (none.length > 0)
      problems.push(`${none.length} event(s) without a row in ${effects.table} (${none[0]?.key})`);
  }
  if (!classified.detailed && !effects) {
    return {
      id: "I1",
      title,
      status: "not checked",
      detail: "the handler reports no per-event status; pass --effects <table>:<attribute> to count its rows",
    };
  }
  const nothing = nothingProcessed(events, classified.detailed, effects?.rows.length ?? 0);
  if (nothing) return { id: "I1", title, status: "not checked", detail: nothing };
  return {
    id: "I1",
    title,
    status: problems.length ? "fail" : "pass",
    detail: [...problems, ...evidence].join("; "),
  };
}

/**
 * Why I1 has nothing to judge, or undefined: no event at all, or none reported processed and no effect row. A check
 * of zero effects would pass whatever the handler does.
 */
function nothingProcessed(
  events: readonly { outcomes: readonly string[] }[],
  detailed: boolean,
  rows: number,
): string | undefined {
  if (events.length === 0) return "no event was processed: there were no events";
  if (!detailed || rows > 0 || events.some((e) => e.outcomes.includes("processed"))) return undefined;
  return `no event was processed: none of the ${events.length} events was reported processed`;
}

/** The records I2 and I3 read, or their check when there are none: the state was not named, or was unreadable. */
function recordsFor(id: "I2" | "I3", title: string, state: RunState | undefined): ReadState | InvariantCheck {
  if (!state) {
    const detail = "pass --state-table or --state-store to read the guard's state";
    return { id, title, status: "not checked", detail };
  }
  // Asked for and unreadable: a failure, so that a run pointed at the wrong place does not pass.
  if ("error" in state)
    return {
      id,
      title,
      status: "fail",
      detail: `cannot read the guard's state (${state.where}): ${state.error}`,
    };
  return state;
}

function monotonic({ classified, state, bucket }: CheckInputs): InvariantCheck {
  const title = `${INVARIANT_CATALOGUE.I2.title} (final position is the newest event's)`;
  const read = recordsFor("I2", title, state);
  if ("id" in read) return read;
  if (bucket === undefined) {
    return {
      id: "I2",
      title,
      status: "not checked",
      detail: "message positions are derived by the handler, not known from outside",
    };
  }
  if (read.byRow) {
    const detail =
      "records are named by their rows (--row-key without --row-key-inverse): their subjects are unknown";
    return { id: "I2", title, status: "not checked", detail };
  }
  // Only events that got through count: one that never did is lost (I4), not out of order.
  const newest = new Map<string, string>();
  let unfinished = 0;
  for (const e of classified.perEvent.values()) {
    if (!gotThrough(e)) {
      unfinished++;
      continue;
    }
    const pos = normalizeSequencer(e.sequencer ?? "");
    const subject = `${bucket}/${e.key}`;
    if ((newest.get(subject) ?? "") < pos) newest.set(subject, pos);
  }
  const ordered = read.records.filter((r) => r.key.startsWith("o#"));
  const behind = ordered
    .filter((r) => {
      const want = newest.get(r.key.slice(2));
      return want !== undefined && (r.committedPosition ?? "") < want;
    })
    .map((r) => r.key.slice(2));
  const skipped = unfinished ? `; ${unfinished} event(s) never got through, left to I4` : "";
  if (ordered.length === 0) {
    const detail = `no ordered subjects in ${read.where} (dedupe-only handler)${skipped}`;
    return { id: "I2", title, status: "pass", detail };
  }
  const finding = behind.length
    ? `${behind.length} subject(s) whose committed position is older than their newest event (${behind[0]})`
    : `${ordered.length} ordered subjects, each committed at its newest event (of those acknowledged)`;
  return stateVerdict("I2", title, read, finding, behind.length > 0, skipped);
}

function liveness({ state }: CheckInputs): InvariantCheck {
  const title = `${INVARIANT_CATALOGUE.I3.title} (no subject left held)`;
  const read = recordsFor("I3", title, state);
  if ("id" in read) return read;
  // A record last claimed before the run is not this run's to finish (a store that outlives runs: SQL, a file).
  const before = (r: { fence: number }) => (claimedAtMs(r.fence) ?? read.sinceMs) < read.sinceMs;
  const mine = read.records.filter((r) => !before(r));
  const older = read.records.length - mine.length;
  const held = mine.filter((r) => r.status === "running");
  const notCounted = older ? `; ${older} record(s) last claimed before this run not counted` : "";
  const finding = held.length
    ? `${held.length} subject(s) still claimed by a run that never finished (${held[0]?.key})`
    : `${mine.length} state records, none still claimed`;
  return stateVerdict("I3", title, read, finding, held.length > 0, notCounted);
}

/**
 * I2's and I3's verdict on the records read: `finding` (what failed, or the evidence that it passed), where the
 * records were read, `note`, and whether a listing that reached its limit read only part of the state.
 */
function stateVerdict(
  id: "I2" | "I3",
  title: string,
  read: ReadState,
  finding: string,
  failed: boolean,
  note: string,
): InvariantCheck {
  const truncated =
    read.records.length >= RUN_STATE_LIMIT ? ` (the first ${RUN_STATE_LIMIT} records only)` : "";
  return {
    id,
    title,
    status: failed ? "fail" : "pass",
    detail: `${finding} in ${read.where}${note}${truncated}`,
  };
}

function nothingLost({ classified }: CheckInputs): InvariantCheck {
  const title = INVARIANT_CATALOGUE.I4.title;
  const events = [...classified.perEvent.values()];
  const dead = events.filter((e) => !gotThrough(e) && e.outcomes.includes("dead-lettered"));
  const lost = events.filter((e) => !gotThrough(e) && !e.outcomes.includes("dead-lettered"));
  const never = lost.filter((e) => e.outcomes.length === 0);
  const detail =
    `${classified.perDelivery.length} deliveries, each ended as one outcome; ` +
    `${events.length - lost.length - dead.length}/${events.length} events acknowledged` +
    (dead.length ? `, ${dead.length} dead-lettered (in the DLQ)` : "") +
    (lost.length
      ? `, ${lost.length} lost: ${never.length ? `${never.length} never delivered, ` : ""}` +
        `every delivery failed, none dead-lettered (${lost[0]?.key})`
      : "");
  return { id: "I4", title, status: lost.length ? "fail" : "pass", detail };
}
