import { resolveOptions } from "../../core/options.js";
import { type ClaimRequest, isOwnClaim, landedAs, landedClaim, type StateRecord } from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import {
  clientId,
  foldable,
  isValkeyAtomicWrite,
  type ValkeyAtomicWrite,
  writeOutcomes,
  writeParams,
} from "./atomic-write.js";
import type { ValkeyClient } from "./client.js";
import { valkeyStoreError } from "./errors.js";
import { escapeTag, outboxHintRedisKey, outboxTagOf, stateRedisKey } from "./keys.js";
import type { ScriptName } from "./lua.js";
import { VALKEY_STORE_OPTIONS, type ValkeyStoreOptions } from "./options.js";
import { hashOfFlat, recordOf } from "./record.js";
import { ScriptRunner } from "./runner.js";

/** A script's answer (lua.ts): landed, the state it decided on (HGETALL's reply), the sink writes' outcomes. */
type Reply = [number, unknown[], number[]?];

/** What the engine's sink and admin use of a store: its client, scripts and prefix (not public API). */
export interface ValkeyInternals {
  client: ValkeyClient;
  runner: ScriptRunner;
  keyPrefix: string;
}
const internals = new WeakMap<ValkeyStore, ValkeyInternals>();

export function internalsOf(store: ValkeyStore): ValkeyInternals {
  return internals.get(store) as ValkeyInternals;
}

/**
 * The state store on Valkey or Redis (ioredis). Each state key is one hash (`<prefix>{<state key>}`, keys.ts); each
 * step is one server-side script (lua.ts) sent with EVALSHA: one round trip, and a refusal returns the state it was
 * refused on. A commit (or apply) runs its sink writes (ValkeyFencedSink, `valkeyWrite`) in the same script, so
 * effect and commit land together; they must be in the state key's slot (its hash tag). The key's expiry moves with
 * the lease (PEXPIREAT). Durability is the server's: docs/valkey.md.
 */
export class ValkeyStore implements Store.StateStore {
  readonly engine = "valkey";
  readonly maxResultBytes: number;
  readonly keyPrefix: string;
  readonly #client: ValkeyClient;
  readonly #runner: ScriptRunner;
  readonly #floorMs: string;

  constructor(options: ValkeyStoreOptions) {
    const o = resolveOptions("ValkeyStore", VALKEY_STORE_OPTIONS, options);
    this.#client = o.client;
    this.keyPrefix = o.keyPrefix;
    this.maxResultBytes = o.maxResultBytes;
    this.#floorMs = String(o.minRetentionMs);
    this.#runner = new ScriptRunner(o.client, o.waitForReplicas);
    internals.set(this, { client: o.client, runner: this.#runner, keyPrefix: o.keyPrefix });
  }

  /** The hash that holds `stateKey`'s state. */
  redisKeyOf(stateKey: string): string {
    return stateRedisKey(this.keyPrefix, stateKey);
  }

  async claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    const args = [...claimArgs(req, String(req.leaseUntilMs)), this.#floorMs];
    const [landed, flat] = await this.#run("claim", req.key, [], args);
    const old = recordOf(req.key, hashOfFlat(flat));
    if (landed === 1) {
      const attempt = old?.identity === req.identity ? old.attempts + 1 : 1;
      return { claimed: true, fence: req.fence, attempt, leaseUntilMs: req.leaseUntilMs, previous: old };
    }
    const state = old as StateRecord; // an absent key is always claimable
    // A retry of a claim that landed (its response was lost): ours.
    return landedClaim(state, req) ?? { claimed: false, state };
  }

  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const writes = foldable(this.#client, escapeTag(req.key), req.writes);
    const w = writeParams(writes);
    const args = [
      ...claimArgs(req),
      this.#floorMs,
      ...this.#committed(req),
      String(writes.length),
      ...w.args,
    ];
    const [landed, flat, outcomes] = await this.#run("claimAndCommit", req.key, w.keys, args);
    if (landed === 1) {
      await this.#hintOutbox(writes);
      return { claimed: true, writes: writeOutcomes(writes, outcomes) };
    }
    const state = recordOf(req.key, hashOfFlat(flat)) as StateRecord;
    // A retry of a claim-and-commit that landed.
    if (isOwnClaim(state, req) && state.status === "done") {
      await this.#hintOutbox(writes);
      return { claimed: true, writes: unknownWrites(writes) };
    }
    return { claimed: false, state };
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const writes = foldable(this.#client, escapeTag(req.key), req.writes);
    const w = writeParams(writes);
    const committed = this.#committed(req);
    const args = [String(req.fence), String(req.expiresAtSeconds), ...committed, this.#floorMs];
    const [landed, flat, outcomes] = await this.#run("commit", req.key, w.keys, [
      ...args,
      String(writes.length),
      ...w.args,
    ]);
    if (landed === 1) {
      await this.#hintOutbox(writes);
      return { committed: true, writes: writeOutcomes(writes, outcomes) };
    }
    const state = recordOf(req.key, hashOfFlat(flat));
    // A retry of a commit that landed: only the holder of this fence could have committed it.
    if (landedAs(state, req.fence, "done")) {
      await this.#hintOutbox(writes);
      return { committed: true, writes: unknownWrites(writes) };
    }
    return { committed: false, state };
  }

  async renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    const args = [String(req.fence), String(req.leaseUntilMs), String(req.expiresAtSeconds), this.#floorMs];
    const [landed, flat] = await this.#run("renew", req.key, [], args);
    return landed === 1 ? { ok: true } : { ok: false, state: recordOf(req.key, hashOfFlat(flat)) };
  }

  async release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    const [landed, flat] = await this.#run("release", req.key, [], [String(req.fence)]);
    const state = recordOf(req.key, hashOfFlat(flat));
    // A retry of a release that landed.
    if (landed === 1 || landedAs(state, req.fence, "released")) return { ok: true };
    return { ok: false, state };
  }

  async read(key: string): Promise<StateRecord | undefined> {
    try {
      return recordOf(key, await this.#client.hgetall(this.redisKeyOf(key)));
    } catch (error) {
      throw valkeyStoreError("read", key, error, this.#client);
    }
  }

  canFold(write: Store.AtomicWrite): boolean {
    return isValkeyAtomicWrite(write) && write.client === clientId(this.#client);
  }

  /**
   * The committed result, its omitted size and the fingerprint ('' absent, '+value' present). A result over
   * maxResultBytes is not stored, its size is (the guard omits it before; a direct caller gets the same rule).
   */
  #committed(req: { result?: string; resultOmittedBytes?: number; fingerprint?: string }): string[] {
    const opt = (v: string | number | undefined) => (v === undefined ? "" : `+${v}`);
    const bytes = req.result === undefined ? 0 : Buffer.byteLength(req.result, "utf8");
    if (bytes > this.maxResultBytes) return ["", opt(bytes), opt(req.fingerprint)];
    return [opt(req.result), opt(req.resultOmittedBytes), opt(req.fingerprint)];
  }

  /**
   * After a commit that added outbox entries (ValkeyOutbox), their tags to the outbox's hint set, where relays look
   * first. Another slot than the commit's, so not in its script: a hint lost here (an error, a crash) only delays the
   * entry until a relay's sweep finds it (outbox.ts); so the error is not the commit's.
   */
  async #hintOutbox(writes: readonly ValkeyAtomicWrite[]): Promise<void> {
    const tags = writes.flatMap((w) => {
      const tag = w.op === "zadd" ? outboxTagOf(this.keyPrefix, w.key) : undefined;
      return tag === undefined ? [] : [tag];
    });
    if (tags.length === 0) return;
    await this.#client.sadd(outboxHintRedisKey(this.keyPrefix), ...new Set(tags)).catch(() => 0);
  }

  async #run(name: ScriptName, key: string, writeKeys: string[], args: string[]): Promise<Reply> {
    return (await this.#runner.run(name, name, key, [this.redisKeyOf(key), ...writeKeys], args)) as Reply;
  }
}

/**
 * The claim's arguments (lua.ts CLAIM; CLAIM_AND_COMMIT without the lease): position, identity, fence, token,
 * [lease until], expires at, now, grace, supersede.
 */
function claimArgs(req: ClaimRequest, lease?: string): string[] {
  const head = [req.position, req.identity, String(req.fence), req.token];
  const tail = [
    String(req.expiresAtSeconds),
    String(req.nowMs),
    String(req.leaseGraceMs),
    req.supersede ? "1" : "0",
  ];
  return lease === undefined ? [...head, ...tail] : [...head, lease, ...tail];
}
