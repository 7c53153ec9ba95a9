import type { StateRecord } from "../../core/state.js";
import { claimedAtMs, leaseLive } from "../../core/state-admin.js";

/**
 * A state record as `eonce state` shows it, decoded for a reader at `nowMs`: times as ISO strings with what is left
 * or how long ago, and sizes instead of the stored result. `--json` prints it as it is; absent values are null, so
 * every record has the same keys.
 */
export interface StateView {
  key: string;
  status: StateRecord["status"];
  position: string;
  identity: string;
  fence: number;
  /** When the last claim was taken (from its fence), and how long ago; null when the fence is not a clock's. */
  claimedAt: string | null;
  ageMs: number | null;
  /** `live` while a running claim's lease has not ended; `expired` when a running claim's has (a crashed holder). */
  lease: "live" | "expired" | "none";
  leaseUntil: string | null;
  /** Lease left (live) or, negative, since it ended (expired). */
  leaseLeftMs: number | null;
  committedPosition: string | null;
  committedIdentity: string | null;
  /** The stored result's size (UTF-8 bytes of its JSON); listings leave it null: they do not read results. */
  resultBytes: number | null;
  /** The committed result was too large to store: its size. */
  resultOmittedBytes: number | null;
  committedFingerprint: string | null;
  /** Consecutive claims of the current identity. */
  attempts: number;
  /** When the store may delete the record (TTL), and how long until then. */
  expiresAt: string | null;
  expiresInMs: number | null;
  token: string | null;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function viewOf(r: StateRecord, nowMs: number): StateView {
  const claimed = claimedAtMs(r.fence);
  const expiresMs = r.expiresAtSeconds === undefined ? undefined : r.expiresAtSeconds * 1000;
  const running = r.status === "running" && r.leaseUntilMs !== undefined;
  return {
    key: r.key,
    status: r.status,
    position: r.position,
    identity: r.identity,
    fence: r.fence,
    claimedAt: iso(claimed),
    ageMs: claimed === undefined ? null : nowMs - claimed,
    lease: running ? (leaseLive(r, nowMs) ? "live" : "expired") : "none",
    leaseUntil: iso(r.leaseUntilMs),
    leaseLeftMs: r.leaseUntilMs === undefined ? null : r.leaseUntilMs - nowMs,
    committedPosition: r.committedPosition ?? null,
    committedIdentity: r.committedIdentity ?? null,
    resultBytes: r.result === undefined ? null : Buffer.byteLength(r.result, "utf8"),
    resultOmittedBytes: r.resultOmittedBytes ?? null,
    committedFingerprint: r.committedFingerprint ?? null,
    attempts: r.attempts,
    expiresAt: iso(expiresMs),
    expiresInMs: expiresMs === undefined ? null : expiresMs - nowMs,
    token: r.token ?? null,
  };
}

/** `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`, `3d 04h`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  const pad = (n: number) => String(Math.floor(n)).padStart(2, "0");
  if (abs < 1000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(1)} s`;
  if (abs < 3_600_000) return `${Math.floor(abs / 60_000)}m ${pad((abs % 60_000) / 1000)}s`;
  if (abs < 86_400_000) return `${Math.floor(abs / 3_600_000)}h ${pad((abs % 3_600_000) / 60_000)}m`;
  return `${Math.floor(abs / 86_400_000)}d ${pad((abs % 86_400_000) / 3_600_000)}h`;
}

/** The lease in words: `12.3 s left`, `expired 4m 05s ago`, `none`. */
export function describeLease(v: StateView): string {
  if (v.lease === "none" || v.leaseLeftMs === null) return "none";
  return v.lease === "live"
    ? `${formatDuration(v.leaseLeftMs)} left`
    : `expired ${formatDuration(v.leaseLeftMs)} ago`;
}

/** The record in a few words, for messages: `fence 123: running, position 0…07, lease 12.3 s left`. */
export function describeHolder(v: StateView): string {
  const lease = v.status === "running" ? `, lease ${describeLease(v)}` : "";
  return `fence ${v.fence}: ${v.status}, position ${v.position || '""'}${lease}`;
}
