/**
 * The in-memory reference store, for unit tests.
 * @module effectively-once/engines/memory
 */
import { UnsupportedAtomicWriteError } from "../../core/errors.js";
import { integer, resolveOptions, schemaFor } from "../../core/options.js";
import {
  type ClaimRequest,
  claimAllowed,
  isOwnClaim,
  landedAs,
  landedClaim,
  type StateRecord,
} from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import { isMemoryWrite, landMemoryWrite, type MemoryAtomicWrite } from "./atomic-write.js";

export type { MemoryAtomicWrite } from "./atomic-write.js";

/** The options of `MemoryStore`. */
export interface MemoryStoreOptions {
  /** Largest stored result; default the DynamoDB store's, so local runs behave as deployed ones. */
  maxResultBytes?: number;
}

/**
 * The reference store: the state machine of src/core/state.ts in a Map, one process only. It passes the
 * same contract suite as the DynamoDB store; use it for unit tests of handlers, never for production.
 * Every operation is synchronous inside, so each is one atomic step like the engine's single request.
 */
const MEMORY_STORE_OPTIONS = schemaFor<MemoryStoreOptions>()({
  maxResultBytes: integer({ min: 1, default: DYNAMODB_MAX_RESULT_BYTES }),
});

export class MemoryStore implements Store.StateStore {
  readonly engine = "memory";
  readonly maxResultBytes: number;
  readonly #items = new Map<string, StateRecord>();

  constructor(options: MemoryStoreOptions = {}) {
    this.maxResultBytes = resolveOptions("MemoryStore", MEMORY_STORE_OPTIONS, options).maxResultBytes;
  }

  async claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    return this.#claim(req);
  }

  #claim(req: ClaimRequest): Store.ClaimResult {
    const old = this.#items.get(req.key);
    if (!claimAllowed(old, req)) {
      const state = { ...(old as StateRecord) };
      // A retry of a claim that landed: ours, not a refusal.
      return landedClaim(state, req) ?? { claimed: false, state };
    }
    const attempt = old && old.identity === req.identity ? old.attempts + 1 : 1;
    const record: StateRecord = {
      ...(old ?? { key: req.key }),
      status: "running",
      position: req.position,
      identity: req.identity,
      fence: req.fence,
      token: req.token,
      leaseUntilMs: req.leaseUntilMs,
      expiresAtSeconds: req.expiresAtSeconds,
      attempts: attempt,
    };
    this.#items.set(req.key, record);
    return {
      claimed: true,
      fence: req.fence,
      attempt,
      leaseUntilMs: req.leaseUntilMs,
      previous: old ? { ...old } : undefined,
    };
  }

  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const old = this.#items.get(req.key);
    if (old && isOwnClaim(old, req) && old.status === "done") {
      return { claimed: true, writes: unknownWrites(req.writes) };
    }
    const writes = memoryWrites(req.writes);
    const claim = this.#claim(req);
    if (!claim.claimed) return claim;
    const commit = this.#commit({ ...req, fence: claim.fence }, writes);
    if (!commit.committed) throw new Error("unreachable: a claim just taken is held");
    return { claimed: true, writes: commit.writes };
  }

  async renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    const held = this.#held(req);
    if (!held) return { ok: false, state: this.#copy(req.key) };
    held.leaseUntilMs = req.leaseUntilMs;
    held.expiresAtSeconds = Math.max(held.expiresAtSeconds ?? 0, req.expiresAtSeconds);
    return { ok: true };
  }

  async release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    const held = this.#held(req);
    if (!held) {
      const state = this.#copy(req.key);
      // A retry of a release that landed.
      if (landedAs(state, req.fence, "released")) return { ok: true };
      return { ok: false, state };
    }
    held.status = "released";
    delete held.leaseUntilMs;
    return { ok: true };
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const state = this.#items.get(req.key);
    // A retry of a commit that landed: the fence committed it, and no one else holds that fence.
    if (landedAs(state, req.fence, "done")) {
      return { committed: true, writes: unknownWrites(req.writes) };
    }
    return this.#commit(req, memoryWrites(req.writes));
  }

  #commit(req: Store.CommitRequest, writes: MemoryAtomicWrite[]): Store.CommitResult {
    const r = this.#held(req);
    if (!r) return { committed: false, state: this.#copy(req.key) };
    const outcomes: Store.WriteOutcome[] = writes.map((w) => ({
      description: w.description,
      status: landMemoryWrite(w) ? "applied" : "stale",
    }));
    r.status = "done";
    r.committedPosition = r.position;
    r.committedIdentity = r.identity;
    r.expiresAtSeconds = req.expiresAtSeconds;
    r.attempts = 0;
    delete r.leaseUntilMs;
    if (req.result !== undefined) r.result = req.result;
    else delete r.result;
    if (req.resultOmittedBytes !== undefined) r.resultOmittedBytes = req.resultOmittedBytes;
    else delete r.resultOmittedBytes;
    if (req.fingerprint !== undefined) r.committedFingerprint = req.fingerprint;
    else delete r.committedFingerprint;
    return { committed: true, writes: outcomes };
  }

  async read(key: string): Promise<StateRecord | undefined> {
    return this.#copy(key);
  }

  /** Removes the item, as TTL would (for tests and the fault simulator). */
  forget(key: string): void {
    this.#items.delete(key);
  }

  /** Every record, copies (for MemoryStateAdmin in memory-admin.ts). */
  records(): StateRecord[] {
    return [...this.#items.values()].map((r) => ({ ...r }));
  }

  canFold(write: Store.AtomicWrite): boolean {
    return isMemoryWrite(write);
  }

  #held(req: Store.FencedRequest): StateRecord | undefined {
    const r = this.#items.get(req.key);
    return r && r.fence === req.fence && r.status === "running" ? r : undefined;
  }

  /** A copy, so callers never mutate the store's state. */
  #copy(key: string): StateRecord | undefined {
    const r = this.#items.get(key);
    return r ? { ...r } : undefined;
  }
}

function memoryWrites(writes: readonly Store.AtomicWrite[] | undefined): MemoryAtomicWrite[] {
  return (writes ?? []).map((w) => {
    if (!isMemoryWrite(w))
      throw new UnsupportedAtomicWriteError(`MemoryStore cannot fold a ${w.engine} write`);
    return w;
  });
}
