import { INVARIANT_CATALOGUE, type InvariantId } from "../../core/invariants.js";
import { normalizeSequencer } from "../../core/position.js";
import type { StateRecord } from "../../core/state.js";
import { claimedAtMs } from "../../core/state-admin.js";
import { type Classified, type EventOutcomes, gotThrough } from "./outcomes.js";
import { type ReadState, RUN_STATE_LIMIT, type RunState } from "./state.js";

/**
 * One check of `eonce run`'s report (the invariants I1–I4, the durable checks D1–D3). `fail` fails the run; `not
 * checked` (the check could not be made: a flag missing, nothing to judge) leaves its result unknown; `n/a` is a check
 * that does not apply to this run (I2 for messages, whose positions are the handler's; D2 for events without one).
 */
export interface RunCheck<Id extends string = string> {
  id: Id;
  title: string;
  status: "pass" | "fail" | "not checked" | "n/a";
  detail: string;
}

/**
 * One invariant check of `eonce run` (docs/local-runtime.md), made from outside the handler where possible; its id
 * is the catalogue's (src/core/invariants.ts), shared with the fault simulator.
 */
export type InvariantCheck = RunCheck<Extract<InvariantId, "I1" | "I2" | "I3" | "I4">>;

/** The effects table I1 counts (`--effects table:attribute[:step]`) and its rows. */
export interface EffectRows {
  table: string;
  /** The attribute holding the event's key: an S3 event's sequencer, a message's body field of that name. */
  attribute: string;
  /** Durable steps: the attribute naming the step that wrote the row; rows are then counted per (event, step). */
  step?: string | undefined;
  rows: Record<string, unknown>[];
  /** Message runs: each event's key (its body's `attribute`), by event id; S3 events are keyed by their sequencer. */
  keys?: ReadonlyMap<string, string>;
}

export interface CheckInputs {
  classified: Classified;
  effects?: EffectRows;
  /** `--payments`: the payments API's charges, counted as effects (each event charged once at the provider). */
  charges?: EffectRows;
  /** The guard's state, read through its store's admin (`--state-store`, `--state-table`; state.ts). */
  state?: RunState;
  /** S3 runs: the input bucket (subjects are `bucket/key`). Message runs have none. */
  bucket?: string;
}

export function checkInvariants(inputs: CheckInputs): InvariantCheck[] {
  return [exactlyOnce(inputs), monotonic(inputs), liveness(inputs), nothingLost(inputs)];
}

function exactlyOnce({ classified, effects, charges }: CheckInputs): InvariantCheck {
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
  for (const rows of [effects, charges]) {
    if (!rows) continue;
    const found = countEffects(rows, events);
    evidence.push(found.evidence);
    problems.push(...found.problems);
  }
  if (!classified.detailed && !effects && !charges) {
    return {
      id: "I1",
      title,
      status: "not checked",
      detail: "the handler reports no per-event status; pass --effects <table>:<attribute> to count its rows",
    };
  }
  const rowCount = (effects?.rows.length ?? 0) + (charges?.rows.length ?? 0);
  const nothing = nothingProcessed(events, classified.detailed, rowCount);
  if (nothing) return { id: "I1", title, status: "not checked", detail: nothing };
  return {
    id: "I1",
    title,
    status: problems.length ? "fail" : "pass",
    detail: [...problems, ...evidence].join("; "),
  };
}

/**
 * Rows per event in the effects table: each event (events sharing a key are one: a message resent with the same
 * order id) must have a row, and none more than one (with `step`, more than one per step).
 */
function countEffects(effects: EffectRows, events: readonly EventOutcomes[]) {
  const { table, attribute, step } = effects;
  // Own attributes only: the attribute name is a command-line argument (`constructor` is not a column).
  const own = (row: Record<string, unknown>, name: string) =>
    String(Object.hasOwn(row, name) ? row[name] : undefined);
  const counts = new Map<string, Map<string, number>>();
  for (const row of effects.rows) {
    const perStep = counts.get(own(row, attribute)) ?? new Map<string, number>();
    const at = step === undefined ? "" : own(row, step);
    perStep.set(at, (perStep.get(at) ?? 0) + 1);
    counts.set(own(row, attribute), perStep);
  }
  const byKey = new Map<string, EventOutcomes>();
  for (const e of events) {
    const key = effects.keys?.get(e.id) ?? e.sequencer ?? e.id;
    if (!byKey.has(key)) byKey.set(key, e);
  }
  const extra: EventOutcomes[] = [];
  const none: EventOutcomes[] = [];
  for (const [key, e] of byKey) {
    const perStep = [...(counts.get(key)?.values() ?? [])];
    if (perStep.length === 0) none.push(e);
    else if (perStep.some((n) => n > 1)) extra.push(e);
  }
  const per = step === undefined ? "" : ` (counted per ${step})`;
  const problems: string[] = [];
  if (extra.length > 0)
    problems.push(
      `${extra.length} event(s) with more than one row${step === undefined ? "" : " for one step"} in ${table} (${extra[0]?.key})`,
    );
  if (none.length > 0) problems.push(`${none.length} event(s) without a row in ${table} (${none[0]?.key})`);
  return { problems, evidence: `${table}: ${effects.rows.length} rows for ${byKey.size} events${per}` };
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

/**
 * The records I2 and I3 read, or their check when there are none to judge: the state was not named, is unreadable,
 * or holds nothing of this run although events were processed. The last two fail, so that a run pointed at the wrong
 * place (another table, file or key prefix than the handler's) does not pass.
 */
function recordsFor(
  id: "I2" | "I3",
  title: string,
  state: RunState | undefined,
  classified: Classified,
): ReadState | InvariantCheck {
  if (!state) {
    const detail = "pass --state-table or --state-store to read the guard's state";
    return { id, title, status: "not checked", detail };
  }
  if ("error" in state)
    return {
      id,
      title,
      status: "fail",
      detail: `cannot read the guard's state (${state.where}): ${state.error}`,
    };
  const handled = handledEvents(classified);
  if (handled.count > 0 && thisRuns(state).length === 0) {
    const older = state.records.length ? ` (${state.records.length} record(s) of earlier runs only)` : "";
    const detail =
      `no state record of this run in ${state.where}${older}, though ${handled.count} event(s) ${handled.how}: ` +
      "the run reads another place than the handler writes to (its --state-store, --state-table, --schema, " +
      "--state-file or --key-prefix)";
    return { id, title, status: "fail", detail };
  }
  return state;
}

/** Events this run handled, so that the guard recorded them: reported processed, or acknowledged by a plain handler. */
function handledEvents(classified: Classified): { count: number; how: string } {
  const events = [...classified.perEvent.values()];
  const how = classified.detailed ? "processed" : "acknowledged";
  return { count: events.filter((e) => e.outcomes.includes(how)).length, how };
}

/** The records claimed during this run: one last claimed before it (a store that outlives runs) is another run's. */
function thisRuns(read: ReadState): StateRecord[] {
  return read.records.filter((r) => (claimedAtMs(r.fence) ?? read.sinceMs) >= read.sinceMs);
}

function monotonic({ classified, state, bucket }: CheckInputs): InvariantCheck {
  const title = `${INVARIANT_CATALOGUE.I2.title} (final position is the newest event's)`;
  if (bucket === undefined) {
    return {
      id: "I2",
      title,
      status: "n/a",
      detail: "message positions are derived by the handler, not known from outside",
    };
  }
  const read = recordsFor("I2", title, state, classified);
  if ("id" in read) return read;
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

function liveness({ state, classified }: CheckInputs): InvariantCheck {
  const title = `${INVARIANT_CATALOGUE.I3.title} (no subject left held)`;
  const read = recordsFor("I3", title, state, classified);
  if ("id" in read) return read;
  // A record last claimed before the run is not this run's to finish (a store that outlives runs: SQL, a file).
  const mine = thisRuns(read);
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
