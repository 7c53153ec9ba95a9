import { StoreError } from "../core/errors.js";
import type { ClaimRequest, StateRecord } from "../core/state.js";
import type {
  AtomicWrite,
  ClaimAndCommitRequest,
  ClaimAndCommitResult,
  ClaimResult,
  CommitRequest,
  CommitResult,
  FencedRequest,
  FencedResult,
  RenewRequest,
  StateStore,
} from "../core/store.js";
import type { FaultInjector } from "./faults.js";
import type { Observer } from "./observer.js";
import type { VirtualScheduler } from "./virtual-time.js";

/** What the fault store needs to know of the worker calling it. */
export interface WorkerState {
  readonly id: number;
  readonly offsetMs: number;
  /** The guard call in progress (one at a time per worker). */
  call: number;
  /** While set (virtual ms), the worker is paused: its renewals wait until then. */
  frozenUntil: number;
}

/** A sink write folded into a commit, with what the observer needs to know of it. */
export interface TaggedWrite extends AtomicWrite {
  readonly chaos?: { subject: string; pos: string; fence: number };
}

export interface FaultyStoreOptions {
  sim: VirtualScheduler;
  faults: FaultInjector;
  observer: Observer;
  worker: WorkerState;
  leaseMs: number;
  /** Report atomic sink writes from commit results (DynamoDB); the memory sink reports its own. */
  reportAtomicWrites: boolean;
}

/**
 * A StateStore decorator, one per worker: every call is a scheduling point (the scheduler picks which worker's call
 * goes next), then may get a store fault (src/chaos/faults.ts), and is reported to the observer. Reads are not
 * faulted: the guard never reads.
 */
export class FaultyStore implements StateStore {
  readonly engine: string;
  readonly maxResultBytes: number;

  constructor(
    readonly inner: StateStore,
    readonly o: FaultyStoreOptions,
  ) {
    this.engine = inner.engine;
    this.maxResultBytes = inner.maxResultBytes;
  }

  canFold(write: AtomicWrite): boolean {
    return this.inner.canFold(write);
  }

  read(key: string): Promise<StateRecord | undefined> {
    return this.o.sim.track(() => this.inner.read(key));
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const { worker, observer } = this.o;
    const call = worker.call;
    return this.#call(
      "claim",
      req.key,
      () => this.inner.claim(req),
      (res) => {
        if (res.claimed) {
          observer.claimLanded(worker.id, call, req, res.fence, res.leaseUntilMs, res.previous ?? "unknown");
          return `claimed f${res.fence} att${res.attempt}${res.previous ? ` over ${res.previous.status}` : ""}`;
        }
        observer.claimRefused(worker.id, call, req, res.state);
        return `refused on ${describe(res.state)}`;
      },
      async (before) => {
        // The response is lost: find out (unfaulted) whether it landed, as the checks need to know.
        const after = await this.inner.read(req.key);
        // Landed iff this very call moved the item to its fence (nothing else runs between the two reads). Not by
        // token (a broken store may drop it) nor by fence alone (two claims in one ms ask for the same fence).
        if (after?.status === "running" && after.fence === req.fence && before?.fence !== req.fence)
          observer.claimLanded(worker.id, call, req, after.fence, undefined, before);
      },
      `${req.position || "-"} ${req.identity} f${req.fence}`,
    );
  }

  async claimAndCommit(req: ClaimAndCommitRequest): Promise<ClaimAndCommitResult> {
    const { worker, observer } = this.o;
    const call = worker.call;
    return this.#call(
      "claimAndCommit",
      req.key,
      () => this.inner.claimAndCommit(req),
      (res) => {
        if (res.claimed) {
          // A recognised retry (writes "unknown") landed under an earlier attempt's fence, not this one.
          if (!res.writes.some((w) => w.status === "unknown")) observer.fenceTaken(req.key, req.fence, call);
          this.#reportWrites(req.writes, res.writes);
          return "committed";
        }
        observer.claimRefused(worker.id, call, req, res.state);
        return `refused on ${describe(res.state)}`;
      },
      async () => {},
      `${req.position || "-"} ${req.identity} f${req.fence}`,
    );
  }

  async renew(req: RenewRequest): Promise<FencedResult> {
    const { worker, observer, sim } = this.o;
    // A paused worker's renewals are frozen with it: they go out when it wakes.
    if (worker.frozenUntil > sim.now) await sim.sleep(worker.frozenUntil - sim.now);
    return this.#call(
      "renew",
      req.key,
      () => this.inner.renew(req),
      (res) => {
        if (res.ok) observer.renewed(req.key, req.fence, worker.id, req.leaseUntilMs, true);
        return res.ok ? "renewed" : `refused on ${res.state ? describe(res.state) : "nothing"}`;
      },
      async () => {
        const after = await this.inner.read(req.key);
        if (after?.fence === req.fence && after.leaseUntilMs === req.leaseUntilMs)
          observer.renewed(req.key, req.fence, worker.id, req.leaseUntilMs, false);
      },
      `f${req.fence}`,
    );
  }

  async commit(req: CommitRequest): Promise<CommitResult> {
    const { worker, observer } = this.o;
    const call = worker.call;
    return this.#call(
      "commit",
      req.key,
      () => this.inner.commit(req),
      (res) => {
        if (res.committed) {
          this.#reportWrites(req.writes, res.writes);
          return "committed";
        }
        observer.commitRefused(worker.id, call, req.key, req.fence, res.state);
        return `refused on ${res.state ? describe(res.state) : "nothing"}`;
      },
      async () => {
        const after = await this.inner.read(req.key);
        if (after?.status === "done" && after.fence === req.fence)
          observer.commitLanded(call, req.key, req.fence);
      },
      `f${req.fence}`,
    );
  }

  async release(req: FencedRequest): Promise<FencedResult> {
    return this.#call(
      "release",
      req.key,
      () => this.inner.release(req),
      (res) => (res.ok ? "released" : `refused on ${res.state ? describe(res.state) : "nothing"}`),
      async () => {},
      `f${req.fence}`,
    );
  }

  #reportWrites(
    sent: readonly AtomicWrite[] | undefined,
    outcomes: { description: string; status: string }[],
  ) {
    if (!this.o.reportAtomicWrites) return;
    for (const w of (sent ?? []) as TaggedWrite[]) {
      const applied = outcomes.some((o) => o.description === w.description && o.status === "applied");
      if (w.chaos && applied) this.o.observer.sinkLanded(w.chaos.subject, w.chaos.pos, w.chaos.fence);
    }
  }

  async #call<T>(
    op: string,
    key: string,
    send: () => Promise<T>,
    report: (res: T) => string,
    onLost: (before: StateRecord | undefined) => Promise<void>,
    what: string,
  ): Promise<T> {
    const { sim, faults, observer, worker } = this.o;
    await sim.gate(worker.id, `${op} ${key}`);
    const fault = faults.storeFault(op);
    const head = `w${worker.id} ${op} ${key} ${what}`;
    if (fault === "fail-before") {
      observer.log(() => `${head} -> fail-before (not sent)`);
      throw new StoreError(`${op}: failed before sending (injected)`);
    }
    if (fault === "hang") {
      observer.log(() => `${head} -> hang`);
      await sim.sleep(this.o.leaseMs * 2);
      observer.log(() => `w${worker.id} ${op} ${key} hang ends: error (not sent)`);
      throw new StoreError(`${op}: timed out (injected outage)`);
    }
    if (fault === "delay") {
      const ms = faults.chooser.int(10, Math.floor(this.o.leaseMs / 2));
      observer.log(() => `${head} -> delayed ${ms}ms`);
      await sim.sleep(ms);
    }
    if (fault === "lose-response") {
      const before = await sim.track(() => this.inner.read(key));
      await sim.track(send);
      observer.log(() => `${head} -> sent, response LOST`);
      await sim.track(() => onLost(before));
      throw new StoreError(`${op}: response lost (injected)`);
    }
    try {
      const res = await sim.track(send);
      const said = report(res);
      observer.log(() => `${head} -> ${said}`);
      return res;
    } catch (error) {
      observer.log(() => `${head} -> threw ${(error as Error).message}`);
      throw error;
    }
  }
}

function describe(s: StateRecord): string {
  const lease = s.leaseUntilMs !== undefined ? ` lease..${s.leaseUntilMs % 1_000_000}` : "";
  return `${s.status} ${s.position || "-"} f${s.fence}${lease} cpos=${s.committedPosition ?? "∅"}`;
}
