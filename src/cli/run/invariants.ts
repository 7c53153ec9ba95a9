import { normalizeSequencer } from "../../core/position.js";
import { type Classified, gotThrough } from "./outcomes.js";

/** One invariant check of `eonce run` (docs/local-runtime.md), made from outside the handler where possible. */
export interface InvariantCheck {
  id: "I1" | "I2" | "I3" | "I4";
  title: string;
  status: "pass" | "fail" | "not checked";
  detail: string;
}

export interface CheckInputs {
  classified: Classified;
  /** Rows of the effects table (`--effects table:attribute`), with the attribute holding the event's sequencer. */
  effects?: { table: string; attribute: string; rows: Record<string, unknown>[] };
  /** Items of the guard's state table (`--state-table`). */
  state?: { table: string; items: Record<string, unknown>[] };
  /** S3 runs: the input bucket (subjects are `bucket/key`). Message runs have none. */
  bucket?: string;
}

export function checkInvariants(inputs: CheckInputs): InvariantCheck[] {
  return [exactlyOnce(inputs), monotonic(inputs), liveness(inputs), nothingLost(inputs)];
}

function exactlyOnce({ classified, effects }: CheckInputs): InvariantCheck {
  const title = "exactly-once effect";
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
  return {
    id: "I1",
    title,
    status: problems.length ? "fail" : "pass",
    detail: [...problems, ...evidence].join("; "),
  };
}

function monotonic({ classified, state, bucket }: CheckInputs): InvariantCheck {
  const title = "monotonic (final position is the newest event's)";
  if (!state)
    return { id: "I2", title, status: "not checked", detail: "pass --state-table to read the guard's state" };
  if (bucket === undefined) {
    return {
      id: "I2",
      title,
      status: "not checked",
      detail: "message positions are derived by the handler, not known from outside",
    };
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
  let ordered = 0;
  const behind: string[] = [];
  for (const item of state.items) {
    const pk = String(item.pk ?? "");
    if (!pk.startsWith("o#")) continue;
    ordered++;
    const want = newest.get(pk.slice(2));
    if (want !== undefined && String(item.cpos ?? "") < want) behind.push(pk.slice(2));
  }
  const skipped = unfinished ? `; ${unfinished} event(s) never got through, left to I4` : "";
  if (ordered === 0) {
    return {
      id: "I2",
      title,
      status: "pass",
      detail: `no ordered subjects in the state table (dedupe-only handler)${skipped}`,
    };
  }
  return {
    id: "I2",
    title,
    status: behind.length ? "fail" : "pass",
    detail:
      (behind.length
        ? `${behind.length} subject(s) whose committed position is older than their newest event (${behind[0]})`
        : `${ordered} ordered subjects, each committed at its newest event (of those acknowledged)`) +
      skipped,
  };
}

function liveness({ state }: CheckInputs): InvariantCheck {
  const title = "liveness (no subject left held)";
  if (!state)
    return { id: "I3", title, status: "not checked", detail: "pass --state-table to read the guard's state" };
  const held = state.items.filter((i) => i.status === "running");
  return {
    id: "I3",
    title,
    status: held.length ? "fail" : "pass",
    detail: held.length
      ? `${held.length} subject(s) still claimed by a run that never finished (${String(held[0]?.pk)})`
      : `${state.items.length} state items, none still claimed`,
  };
}

function nothingLost({ classified }: CheckInputs): InvariantCheck {
  const title = "nothing lost";
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
