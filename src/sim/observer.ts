import { INVARIANT_CATALOGUE, type InvariantId } from "../core/invariants.js";
import { positionBefore } from "../core/position.js";
import { type ClaimRequest, classifyRefusal, type StateRecord } from "../core/state.js";
import { VIRTUAL_EPOCH_MS, type VirtualScheduler } from "./virtual-time.js";

/**
 * The invariants a history checks, from the one catalogue (src/core/invariants.ts; of I5, bad input, the keys that
 * break the key rule: src/sim/hostile-keys.ts; O1–O5, the outbox's, in outbox histories: src/sim/outbox-checks.ts).
 * `fencing` marks those that fencing guarantees whatever the clocks do: they are reported even in histories whose
 * clocks differ beyond the guard's clockSkewMs.
 */
export const INVARIANTS = Object.fromEntries(
  Object.entries(INVARIANT_CATALOGUE).map(([id, i]) => [id, i.statement]),
) as Record<InvariantId, string>;

export type { InvariantId };

export interface Violation {
  invariant: InvariantId;
  /** Guaranteed by fencing alone, so it counts even beyond the clock-skew bound. */
  fencing: boolean;
  message: string;
  /** Virtual ms since the history began. */
  atMs: number;
}

interface Holder {
  worker: number;
  call: number;
  /** End of the lease the holder was told it has (its clock converted to virtual true time). */
  confirmedUntil: number;
  /** When the holder stopped renewing (handler ended, paused, or the call gave up on a claim it did not know). */
  stoppedAt?: number;
  lastRenewLanded?: number;
}

/**
 * Largest state item accepted (memory: JSON bytes; DynamoDB: item bytes) besides its key: results in the simulator
 * are tiny. Bounded means bounded whatever the history, not whatever the subject: an item holds its key and up to
 * two identities (current and committed), none longer than the key, so each adds the key's size to the bound.
 */
export const MAX_ITEM_BYTES = 1024;

function itemBound(key: string): number {
  return MAX_ITEM_BYTES + 3 * Buffer.byteLength(key);
}

/**
 * What the fault store and the workers see while a history runs, and the invariants checked on the way (the ones
 * that need to know when something happened); the rest are checked at the end from the stores' contents.
 */
export class HistoryObserver {
  readonly violations: Violation[] = [];
  readonly trace: string[] | undefined;
  readonly #holders = new Map<string, Holder>();
  readonly #landedClaims = new Map<number, { key: string; fence: number }[]>();
  readonly #landedCommits = new Map<number, { key: string; fence: number }[]>();
  readonly #commits = new Map<string, number[]>();
  readonly #fences = new Map<string, Map<number, number>>();
  readonly #lastState = new Map<string, { cpos?: string; fence: number }>();
  readonly #sink = new Map<string, { pos: string; fence: number }>();
  readonly #sinkSampled = new Map<string, { pos: string; fence: number }>();

  constructor(
    readonly sim: VirtualScheduler,
    readonly o: { leaseMs: number; clockSkewMs: number; offsets: readonly number[]; trace: boolean },
  ) {
    if (o.trace) this.trace = [];
  }

  get elapsed(): number {
    return this.sim.now - VIRTUAL_EPOCH_MS;
  }

  log(line: () => string): void {
    this.trace?.push(`${String(this.elapsed).padStart(7)}ms ${line()}`);
  }

  violate(invariant: InvariantId, fencing: boolean, message: string): void {
    this.violations.push({ invariant, fencing, message, atMs: this.elapsed });
    this.log(() => `VIOLATION ${invariant}: ${message}`);
  }

  #spread(): number {
    return Math.max(...this.o.offsets) - Math.min(...this.o.offsets);
  }

  #holder(key: string, fence: number): Holder | undefined {
    return this.#holders.get(`${key}|${fence}`);
  }

  /** A claim landed: `confirmed` when its response reached the worker, `previous` when the state before is known. */
  claimLanded(
    worker: number,
    call: number,
    req: ClaimRequest,
    fence: number,
    leaseUntilMs: number | undefined,
    previous: StateRecord | undefined | "unknown",
  ): void {
    const { key } = req;
    this.fenceTaken(key, fence, call);
    const calls = this.#landedClaims.get(call) ?? [];
    if (!calls.some((c) => c.key === key && c.fence === fence)) calls.push({ key, fence });
    this.#landedClaims.set(call, calls);

    const id = `${key}|${fence}`;
    const confirmed =
      leaseUntilMs === undefined ? Number.NEGATIVE_INFINITY : leaseUntilMs - this.#offset(worker);
    const h = this.#holders.get(id);
    if (h) h.confirmedUntil = Math.max(h.confirmedUntil, confirmed);
    else this.#holders.set(id, { worker, call, confirmedUntil: confirmed });

    if (previous === "unknown" || previous?.status !== "running" || previous.fence === fence) return;
    const prev = this.#holder(key, previous.fence);
    const superseding = req.supersede && positionBefore(previous.position, req.position);
    if (prev && !superseding && prev.confirmedUntil > this.sim.now) {
      this.violate(
        "I3",
        false,
        `w${worker} took ${key} over (fence ${fence}) while w${prev.worker}'s confirmed lease (fence ${previous.fence}) ran ${prev.confirmedUntil - this.sim.now}ms more`,
      );
    }
  }

  /** A claim or claim-and-commit took `fence`: no other call may ever take it on this key. */
  fenceTaken(key: string, fence: number, call: number): void {
    const byFence = this.#fences.get(key) ?? new Map<number, number>();
    this.#fences.set(key, byFence);
    const other = byFence.get(fence);
    if (other !== undefined && other !== call)
      this.violate("I7", false, `fence ${fence} of ${key} handed to call ${other} and call ${call}`);
    byFence.set(fence, call);
  }

  /** A claim (or claim-and-commit) was refused on `state`. */
  claimRefused(worker: number, call: number, req: ClaimRequest, state: StateRecord): void {
    const own = this.#landedClaims.get(call)?.find((c) => c.key === req.key && c.fence === state.fence);
    if (own && state.status === "running")
      this.violate(
        "I6",
        false,
        `w${worker} call ${call}: claim of ${req.key} refused on its own landed claim (fence ${state.fence})`,
      );
    const refusal = classifyRefusal(state, req);
    if (refusal?.kind !== "busy" && refusal?.kind !== "in-flight") return;
    const h = this.#holder(req.key, state.fence);
    if (h?.stoppedAt === undefined) return;
    const stop = Math.max(h.stoppedAt, h.lastRenewLanded ?? 0);
    // The store decided on the claimer's clock when it sent the request (a slow request decides on an old now).
    const decidedAt = req.nowMs - this.#offset(worker);
    const bound = stop + this.o.leaseMs + this.o.clockSkewMs + this.#spread();
    if (decidedAt > bound + 1)
      this.violate(
        "I3",
        false,
        `${req.key} still blocked (${refusal.kind}) ${decidedAt - stop}ms after its holder w${h.worker} (fence ${state.fence}) stopped`,
      );
  }

  renewed(key: string, fence: number, worker: number, leaseUntilMs: number, confirmed: boolean): void {
    const h = this.#holder(key, fence);
    if (!h) return;
    h.lastRenewLanded = this.sim.now;
    if (confirmed) h.confirmedUntil = Math.max(h.confirmedUntil, leaseUntilMs - this.#offset(worker));
  }

  /**
   * A commit (or claim-and-commit) of (`key`, `identity`) landed with `fence`, its answer seen or found after a lost
   * response: the commits that happened, whatever their folded writes did (outbox histories check messages by them).
   */
  committed(key: string, identity: string, fence: number): void {
    const id = `${key}\n${identity}`;
    const fences = this.#commits.get(id) ?? [];
    if (!fences.includes(fence)) this.#commits.set(id, [...fences, fence]);
  }

  /** The fences whose commit of (`key`, `identity`) landed. */
  commitsOf(key: string, identity: string): readonly number[] {
    return this.#commits.get(`${key}\n${identity}`) ?? [];
  }

  commitLanded(call: number, key: string, fence: number): void {
    const list = this.#landedCommits.get(call) ?? [];
    list.push({ key, fence });
    this.#landedCommits.set(call, list);
  }

  commitRefused(
    worker: number,
    call: number,
    key: string,
    fence: number,
    state: StateRecord | undefined,
  ): void {
    const own = this.#landedCommits.get(call)?.some((c) => c.key === key && c.fence === fence);
    if (own && state?.fence === fence && state.status === "done")
      this.violate("I6", false, `w${worker} call ${call}: commit of ${key} refused on its own landed commit`);
  }

  /** The holder of `fence` stopped renewing (its handler ended, or it froze). */
  stopped(key: string, fence: number): void {
    const h = this.#holder(key, fence);
    if (h && h.stoppedAt === undefined) h.stoppedAt = this.sim.now;
  }

  /** A guard call returned: claims it landed but never held (lost responses, then it gave up) stop now. */
  callEnded(call: number): void {
    for (const c of this.#landedClaims.get(call) ?? []) this.stopped(c.key, c.fence);
  }

  /** A sink write landed (the sink's own report): rows only move forward; same position, higher fence. */
  sinkLanded(subject: string, pos: string, fence: number): void {
    const last = this.#sink.get(subject);
    if (last && positionBefore(pos, last.pos))
      this.violate("I2", true, `sink ${subject} went back from ${last.pos} to ${pos}`);
    else if (last && last.pos === pos && fence < last.fence)
      this.violate(
        "I2",
        true,
        `zombie write on sink ${subject} at ${pos}: fence ${fence} after ${last.fence}`,
      );
    if (!last || positionBefore(last.pos, pos) || (last.pos === pos && fence > last.fence))
      this.#sink.set(subject, { pos, fence });
  }

  /** A sample of a state item with everything quiescent (after a step). */
  sampleState(key: string, state: StateRecord | undefined, bytes: number | undefined): void {
    const last = this.#lastState.get(key);
    if (!state) return; // deleted (TTL): what was true of it is kept for the next sample
    if (last?.cpos !== undefined) {
      if (state.committedPosition === undefined || positionBefore(state.committedPosition, last.cpos))
        this.violate(
          "I2",
          true,
          `committed position of ${key} went back from ${last.cpos} to ${state.committedPosition}`,
        );
    }
    if (last && state.fence < last.fence)
      this.violate("I7", false, `fence of ${key} went back from ${last.fence} to ${state.fence}`);
    if (bytes !== undefined && bytes > itemBound(key))
      this.violate("I7", false, `state item ${key} grew to ${bytes} bytes`);
    const cpos = state.committedPosition ?? last?.cpos;
    this.#lastState.set(key, {
      ...(cpos !== undefined ? { cpos } : {}),
      fence: Math.max(state.fence, last?.fence ?? 0),
    });
  }

  sampleSink(subject: string, row: { pos: string; fence: number } | undefined): void {
    const last = this.#sinkSampled.get(subject);
    if (!row) {
      if (last) this.violate("I2", true, `sink row ${subject} disappeared`);
      return;
    }
    if (last && positionBefore(row.pos, last.pos))
      this.violate("I2", true, `sink row ${subject} went back from ${last.pos} to ${row.pos}`);
    this.#sinkSampled.set(subject, row);
  }

  #offset(worker: number): number {
    return this.o.offsets[worker] ?? 0;
  }
}
