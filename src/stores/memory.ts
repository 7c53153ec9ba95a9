import { UnsupportedAtomicWriteError } from "../core/errors.js";
import { type ClaimRequest, isClaimable, type StateRecord } from "../core/state.js";
import type {
  AtomicWrite,
  ClaimAndCommitRequest,
  ClaimAndCommitResult,
  ClaimResult,
  CommitRequest,
  CommitResult,
  FencedRequest,
  StateStore,
  WriteOutcome,
} from "./contract.js";

/** An effect the memory store applies inside its commit: `apply` returns false when its fencing refuses it. */
export interface MemoryAtomicWrite extends AtomicWrite {
  readonly engine: "memory";
  apply(): boolean;
}

interface Entry {
  record: StateRecord;
  attempts: Map<string, number>;
}

/**
 * The reference store: the state machine of src/core/state.ts in a Map, one process only. It passes the
 * same contract suite as the DynamoDB store; use it for unit tests of handlers, never for production.
 */
export class MemoryStore implements StateStore {
  readonly engine = "memory";
  readonly #items = new Map<string, Entry>();

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    return this.#claim(req);
  }

  // Synchronous, so that claimAndCommit is one atomic step like the engine's single request.
  #claim(req: ClaimRequest): ClaimResult {
    const entry = this.#items.get(req.key);
    const old = entry ? this.#view(entry, req.identity) : undefined;
    if (!isClaimable(old, req)) return { claimed: false, state: old as StateRecord };
    const attempts = entry?.attempts ?? new Map<string, number>();
    const attempt = (attempts.get(req.identity) ?? 0) + 1;
    attempts.set(req.identity, attempt);
    const record: StateRecord = {
      ...(old ?? { key: req.key, attempts: 0 }),
      status: "running",
      position: req.position,
      identity: req.identity,
      fence: (old?.fence ?? 0) + 1,
      leaseUntilMs: req.leaseUntilMs,
      expiresAtSeconds: req.expiresAtSeconds,
    };
    this.#items.set(req.key, { record, attempts });
    return { claimed: true, fence: record.fence, attempt, previous: old };
  }

  async claimAndCommit(req: ClaimAndCommitRequest): Promise<ClaimAndCommitResult> {
    const claim = this.#claim(req);
    if (!claim.claimed) return claim;
    const commit = this.#commit({ ...req, fence: claim.fence });
    if (!commit.committed) throw new Error("unreachable: a claim just taken is held");
    return { claimed: true, writes: commit.writes };
  }

  async renew(req: FencedRequest & { leaseUntilMs: number }): Promise<boolean> {
    const entry = this.#held(req);
    if (entry) entry.record.leaseUntilMs = req.leaseUntilMs;
    return entry !== undefined;
  }

  async release(req: FencedRequest): Promise<boolean> {
    const entry = this.#held(req);
    if (!entry) return false;
    entry.record.status = "released";
    delete entry.record.leaseUntilMs;
    return true;
  }

  async commit(req: CommitRequest): Promise<CommitResult> {
    return this.#commit(req);
  }

  #commit(req: CommitRequest): CommitResult {
    const entry = this.#held(req);
    if (!entry) {
      const current = this.#items.get(req.key);
      return { committed: false, state: current ? this.#view(current) : undefined };
    }
    const writes: WriteOutcome[] = (req.writes ?? []).map((w) => {
      if (!isMemoryWrite(w))
        throw new UnsupportedAtomicWriteError(`MemoryStore cannot fold a ${w.engine} write`);
      return { description: w.description, status: w.apply() ? "applied" : "stale" };
    });
    const r = entry.record;
    r.status = "done";
    r.committedPosition = r.position;
    r.committedIdentity = r.identity;
    r.expiresAtSeconds = req.expiresAtSeconds;
    delete r.leaseUntilMs;
    if (req.result !== undefined) r.result = req.result;
    else delete r.result;
    entry.attempts.delete(req.identity);
    return { committed: true, writes };
  }

  async read(key: string): Promise<StateRecord | undefined> {
    const entry = this.#items.get(key);
    return entry ? this.#view(entry) : undefined;
  }

  canFold(write: AtomicWrite): boolean {
    return isMemoryWrite(write);
  }

  #held(req: FencedRequest): Entry | undefined {
    const entry = this.#items.get(req.key);
    return entry && entry.record.fence === req.fence && entry.record.status === "running" ? entry : undefined;
  }

  /** A copy, so callers never mutate the store's state. */
  #view(entry: Entry, identity?: string): StateRecord {
    return { ...entry.record, attempts: entry.attempts.get(identity ?? entry.record.identity) ?? 0 };
  }
}

function isMemoryWrite(write: AtomicWrite): write is MemoryAtomicWrite {
  return write.engine === "memory" && typeof (write as MemoryAtomicWrite).apply === "function";
}
