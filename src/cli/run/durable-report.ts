import type { DurableStart, InvokeRecord } from "../../local/emulators/lambda-server.js";
import { type DurableCheck, type ExecutionOutcome, viewStart } from "./durable-checks.js";

/**
 * What `eonce run` found at the local Lambda endpoint: present in the report when the handler invoked it (a durable
 * dispatcher) or `--durable` was given.
 */
export interface DurableReport {
  /** Invoke requests, by how they ended (`lost`: answers dropped after the start landed, an injected fault). */
  invokes: {
    total: number;
    started: number;
    existing: number;
    conflicts: number;
    rejected: number;
    failedBefore: number;
    lost: number;
  };
  /** The refused Invokes' errors, the most frequent first. */
  refused: { error: string; count: number }[];
  /** Every execution started, in start order, with what its payload's envelope says. */
  starts: DurableStartSummary[];
  /** With `--durable`: the module run, and how each execution ended. */
  durable?: string;
  executions?: ExecutionOutcome[];
  checks: DurableCheck[];
}

/** One start, as the report lists it. */
export interface DurableStartSummary {
  order: number;
  name: string;
  functionName: string;
  qualifier: string;
  arn: string;
  /** From the payload's envelope (null when it has none). */
  subject: string | null;
  identity: string | null;
  /** The envelope's position, or the S3 event's normalized sequencer. */
  position: string | null;
  atMs: number;
}

/** The report's durable part, from the endpoint's records, the checks and the executions. */
export function durableReport(parts: {
  starts: readonly DurableStart[];
  invokes: readonly InvokeRecord[];
  checks: DurableCheck[];
  durable?: string | undefined;
  executions?: ExecutionOutcome[] | undefined;
}): DurableReport {
  const count = (outcome: InvokeRecord["outcome"]) =>
    parts.invokes.filter((i) => i.outcome === outcome).length;
  const refused = new Map<string, number>();
  for (const i of parts.invokes) {
    if (i.outcome === "rejected" && i.error) refused.set(i.error, (refused.get(i.error) ?? 0) + 1);
  }
  return {
    invokes: {
      total: parts.invokes.length,
      started: count("started"),
      existing: count("existing"),
      conflicts: count("conflict"),
      rejected: count("rejected"),
      failedBefore: count("failed-before"),
      lost: parts.invokes.filter((i) => i.lost).length,
    },
    refused: [...refused].map(([error, n]) => ({ error, count: n })).sort((a, b) => b.count - a.count),
    starts: parts.starts.map((s) => {
      const v = viewStart(s);
      return {
        order: s.order,
        name: s.name,
        functionName: s.functionName,
        qualifier: s.qualifier,
        arn: s.arn,
        subject: v.subject ?? null,
        identity: v.execution?.identity ?? null,
        position: v.position ?? null,
        atMs: s.atMs,
      };
    }),
    ...(parts.durable !== undefined ? { durable: parts.durable } : {}),
    ...(parts.executions ? { executions: parts.executions } : {}),
    checks: parts.checks,
  };
}

/** The report's lines about the durable starts and executions (the checks are listed with the invariants). */
export function formatDurable(d: DurableReport | undefined): string[] {
  if (!d) return [];
  const i = d.invokes;
  const faults = [
    i.failedBefore ? `${i.failedBefore} failed before the start` : "",
    i.lost ? `${i.lost} answer(s) lost after it` : "",
  ].filter(Boolean);
  const lines = [
    `durable starts ${d.starts.length} (${i.total} Invokes: ${i.started} started, ${i.existing} answered the existing ` +
      `execution, ${i.conflicts} conflicts, ${i.rejected} refused${faults.length ? `; ${faults.join(", ")}` : ""})`,
  ];
  d.refused.slice(0, 3).forEach((r, n) => {
    lines.push(`${(n === 0 ? "refused" : "").padEnd(15)}${r.count}× ${r.error}`);
  });
  if (d.executions) {
    const statuses = new Map<string, number>();
    for (const e of d.executions) statuses.set(e.status, (statuses.get(e.status) ?? 0) + 1);
    const list = [...statuses].map(([s, n]) => `${s} ${n}`).join(", ") || "none";
    lines.push(`executions     ${list} (${d.durable} under LocalDurableTestRunner)`);
  }
  return lines;
}
