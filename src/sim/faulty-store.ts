import { StoreError } from "../core/errors.js";
import type { ClaimRequest, StateRecord } from "../core/state.js";
import type * as store from "../core/store.js";
import type { HistoryFaultInjector } from "./faults.js";
import type { HistoryObserver } from "./observer.js";
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
export interface TaggedWrite extends store.AtomicWrite {
  readonly chaos?: { subject: string; pos: string; fence: number };
}

export interface FaultyStoreOptions {
  sim: VirtualScheduler;
  faults: HistoryFaultInjector;
  observer: HistoryObserver;
  worker: WorkerState;
  leaseMs: number;
  /** Report atomic sink writes from commit results (DynamoDB); the memory sink reports its own. */
  reportAtomicWrites: boolean;
}

/**
 * A StateStore decorator, one per worker: every call is a scheduling point (the scheduler picks which worker's call
 * goes next), then may get a store fault (src/sim/faults.ts), and is reported to the observer. Reads are not
 * faulted: the guard never reads.
 */
export class FaultyStore implements store.StateStore {
  readonly engine: string;
  readonly maxResultBytes: number;

  constructor(
    readonly inner: store.StateStore,
    readonly o: FaultyStoreOptions,
  ) {
    this.engine = inner.engine;
    this.maxResultBytes = inner.maxResultBytes;
  }

  canFold(write: store.AtomicWrite): boolean {
    return this.inner.canFold(write);
  }

  read(key: string): Promise<StateRecord | undefined> {
    return this.o.sim.track(() => this.inner.read(key));
  }

  claim(req: ClaimRequest): Promise<store.ClaimResult> {
    return this.#call("claim", req, () => this.inner.claim(req), {
      report: (res, call) => this.#claimAnswered(req, call, res),
      lost: (before, call) => this.#claimLost(req, call, before),
    });
  }

  claimAndCommit(req: store.ClaimAndCommitRequest): Promise<store.ClaimAndCommitResult> {
    return this.#call("claimAndCommit", req, () => this.inner.claimAndCommit(req), {
      report: (res, call) => {
        if (!res.claimed) return this.#claimRefused(req, call, res.state);
        // A recognised retry (writes "unknown") landed under an earlier attempt's fence, not this one.
        if (!res.writes.some((w) => w.status === "unknown")) {
          this.o.observer.fenceTaken(req.key, req.fence, call);
          this.o.observer.committed(req.key, req.identity, req.fence);
        }
        this.#reportWrites(req.writes, res.writes);
        return "committed";
      },
      lost: async (before) => {
        const after = await this.inner.read(req.key);
        if (after?.status === "done" && after.fence === req.fence && before?.fence !== req.fence)
          this.o.observer.committed(req.key, req.identity, req.fence);
      },
    });
  }

  async renew(req: store.RenewRequest): Promise<store.FencedResult> {
    const { worker, observer, sim } = this.o;
    // A paused worker's renewals are frozen with it: they go out when it wakes.
    if (worker.frozenUntil > sim.now) await sim.sleep(worker.frozenUntil - sim.now);
    return this.#call("renew", req, () => this.inner.renew(req), {
      report: (res) => {
        if (res.ok) observer.renewed(req.key, req.fence, worker.id, req.leaseUntilMs, true);
        return res.ok ? "renewed" : refusedOn(res.state);
      },
      lost: async () => {
        const after = await this.inner.read(req.key);
        if (after?.fence === req.fence && after.leaseUntilMs === req.leaseUntilMs)
          observer.renewed(req.key, req.fence, worker.id, req.leaseUntilMs, false);
      },
    });
  }

  commit(req: store.CommitRequest): Promise<store.CommitResult> {
    const { worker, observer } = this.o;
    return this.#call("commit", req, () => this.inner.commit(req), {
      report: (res, call) => {
        if (!res.committed) {
          observer.commitRefused(worker.id, call, req.key, req.fence, res.state);
          return refusedOn(res.state);
        }
        observer.committed(req.key, req.identity, req.fence);
        this.#reportWrites(req.writes, res.writes);
        return "committed";
      },
      lost: async (_, call) => {
        const after = await this.inner.read(req.key);
        if (after?.status === "done" && after.fence === req.fence) {
          observer.commitLanded(call, req.key, req.fence);
          observer.committed(req.key, req.identity, req.fence);
        }
      },
    });
  }

  release(req: store.FencedRequest): Promise<store.FencedResult> {
    return this.#call("release", req, () => this.inner.release(req), {
      report: (res) => (res.ok ? "released" : refusedOn(res.state)),
    });
  }

  #claimAnswered(req: ClaimRequest, call: number, res: store.ClaimResult): string {
    if (!res.claimed) return this.#claimRefused(req, call, res.state);
    const { worker, observer } = this.o;
    observer.claimLanded(worker.id, call, req, res.fence, res.leaseUntilMs, res.previous ?? "unknown");
    return `claimed f${res.fence} att${res.attempt}${res.previous ? ` over ${res.previous.status}` : ""}`;
  }

  #claimRefused(req: ClaimRequest, call: number, state: StateRecord): string {
    this.o.observer.claimRefused(this.o.worker.id, call, req, state);
    return `refused on ${describe(state)}`;
  }

  /** The claim's response is lost: find out (unfaulted) whether it landed, as the checks need to know. */
  async #claimLost(req: ClaimRequest, call: number, before: StateRecord | undefined): Promise<void> {
    const after = await this.inner.read(req.key);
    // Landed iff this very call moved the item to its fence (nothing else runs between the two reads). Not by
    // token (a broken store may drop it) nor by fence alone (two claims in one ms ask for the same fence).
    if (after?.status === "running" && after.fence === req.fence && before?.fence !== req.fence)
      this.o.observer.claimLanded(this.o.worker.id, call, req, after.fence, undefined, before);
  }

  #reportWrites(
    sent: readonly store.AtomicWrite[] | undefined,
    outcomes: { description: string; status: string }[],
  ) {
    if (!this.o.reportAtomicWrites) return;
    for (const w of (sent ?? []) as TaggedWrite[]) {
      const applied = outcomes.some((o) => o.description === w.description && o.status === "applied");
      if (w.chaos && applied) this.o.observer.sinkLanded(w.chaos.subject, w.chaos.pos, w.chaos.fence);
    }
  }

  /**
   * One store call: a scheduling point, then maybe a fault, then the call; `report` says what the answer was (and
   * tells the observer), `lost` finds out what happened to a call whose response was lost.
   */
  async #call<T>(
    op: string,
    req: store.FencedRequest | ClaimRequest,
    send: () => Promise<T>,
    on: {
      report: (res: T, call: number) => string;
      lost?: (before: StateRecord | undefined, call: number) => Promise<void>;
    },
  ): Promise<T> {
    const call = this.o.worker.call;
    const { key } = req;
    const what = "token" in req ? `${req.position || "-"} ${req.identity} f${req.fence}` : `f${req.fence}`;
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
      await sim.track(() => (on.lost ? on.lost(before, call) : Promise.resolve()));
      throw new StoreError(`${op}: response lost (injected)`);
    }
    try {
      const res = await sim.track(send);
      const said = on.report(res, call);
      observer.log(() => `${head} -> ${said}`);
      return res;
    } catch (error) {
      observer.log(() => `${head} -> threw ${(error as Error).message}`);
      throw error;
    }
  }
}

function refusedOn(s: StateRecord | undefined): string {
  return `refused on ${s ? describe(s) : "nothing"}`;
}

function describe(s: StateRecord): string {
  const lease = s.leaseUntilMs !== undefined ? ` lease..${s.leaseUntilMs % 1_000_000}` : "";
  return `${s.status} ${s.position || "-"} f${s.fence}${lease} cpos=${s.committedPosition ?? "∅"}`;
}
