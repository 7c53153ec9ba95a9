import type { Redis } from "ioredis";
import type { ClaimRequest } from "../../core/state.js";
import type * as Store from "../../core/store.js";
import type { ServerFault } from "../../sim/backend.js";
import type { Chooser } from "../../sim/chooser.js";
import type { FailoverOptions } from "../engine.js";
import type { ValkeyClient } from "./client.js";

/** Share of write steps after which the replica has caught up by itself (replication is asynchronous). */
const CATCH_UP = 0.5;
/** With waitForReplicas: share of WAITs that time out (the replica did not catch up in time). */
const WAIT_TIMEOUT = 0.2;
/** The failover comes after 1 to this many write steps of the history (drawn per history). */
const MOST_WRITES_BEFORE_FAILOVER = 6;

type Arg = string | number;
type Send = (...args: Arg[]) => Promise<unknown>;
type Reply = [Error | null, unknown];

/**
 * Whether a script wrote, by its answer (src/engines/valkey/lua.ts): landed 1, or a sink write applied; with
 * `barrier` (waitForReplicas), also a refusal on a record, which rewrites it (`refused`).
 */
function wrote(reply: unknown, barrier: boolean): boolean {
  if (!Array.isArray(reply)) return reply === 1;
  const refusedOnRecord = reply[0] === 0 && Array.isArray(reply[1]) && reply[1].length > 0;
  return reply[0] === 1 || (barrier && refusedOnRecord);
}

/**
 * The failover fault (`npm run chaos -- --engine valkey --failover`): the server acknowledges a write before its
 * replica has it, and at one point of the history fails over to the replica, which lacks the writes it had not
 * caught up with. The replica is a copy (DUMP, with each key's TTL) of every key the history's scripts named: after
 * each write step it catches up by itself with a chance (CATCH_UP), else it keeps what it held; the failover
 * RESTOREs the copy over the history's keys (and deletes the keys the copy lacks). Histories run one step at a time,
 * so a copy is the state between two steps, as a replica's is.
 *
 * With `waitForReplicas`, the store runs its real WAIT path (src/engines/valkey/runner.ts), and WAIT is answered
 * here as Redis 7.2 and Valkey answer it: it waits for the last write of its own connection only (a refusal writes
 * too: the scripts' BARRIER variants). A connection is a guard call (its claim's token): each Lambda instance has
 * its own, and a redelivery may reach another. WAIT answers 1 at once when the replica holds that write; else the
 * replica catches up, or (WAIT_TIMEOUT) the step fails with ReplicasNotReachedError, landed on the primary only.
 */
export class LaggingReplica {
  readonly client: ValkeyClient;
  readonly #server: Redis;
  readonly #chooser: Chooser;
  readonly #barrier: boolean;
  readonly #keys = new Set<string>();
  #copy = new Map<string, { dump: Buffer; ttlMs: number }>();
  /** Write steps so far, and the last one the replica holds. */
  #writes = 0;
  #held = 0;
  /** Each connection's last write step: what its WAIT waits for. */
  readonly #lastWrite = new Map<string, number>();
  #connection = "";
  readonly #failoverAt: number;
  #failedOver = false;
  #faults: ServerFault[] = [];

  constructor(server: Redis, o: FailoverOptions) {
    this.#server = server;
    this.#chooser = o.chooser;
    this.#barrier = o.waitForReplicas;
    this.#failoverAt = o.chooser.int(1, MOST_WRITES_BEFORE_FAILOVER);
    this.client = this.#proxy();
  }

  /** The connection the next commands are sent on. */
  on(connection: string): void {
    this.#connection = connection;
  }

  /** A write outside the scripts (a TTL deletion): replicated like any other. */
  async del(key: string): Promise<void> {
    this.#keys.add(key);
    await this.#server.del(key);
    await this.#wrote();
  }

  /** The faults since the last call; fails over once the history has made its planned number of writes. */
  async faults(): Promise<ServerFault[]> {
    if (!this.#failedOver && this.#writes >= this.#failoverAt) await this.#failover();
    const out = this.#faults;
    this.#faults = [];
    return out;
  }

  /** The server as the store sees it: scripts and pipelines pass through the replica model, the rest as it is. */
  #proxy(): ValkeyClient {
    const server = this.#server;
    return new Proxy(server, {
      get: (target, name) => {
        if (name === "evalsha" || name === "eval") return (...args: Arg[]) => this.#script(name, args);
        if (name === "pipeline") return () => this.#pipeline();
        const value = Reflect.get(target, name, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  async #script(how: "evalsha" | "eval", args: Arg[]): Promise<unknown> {
    const count = Number(args[1]);
    for (const key of args.slice(2, 2 + count)) this.#keys.add(String(key));
    const reply = await (this.#server[how] as unknown as Send).apply(this.#server, args);
    if (wrote(reply, this.#barrier)) await this.#wrote();
    return reply;
  }

  async #wrote(): Promise<void> {
    this.#writes++;
    this.#lastWrite.set(this.#connection, this.#writes);
    if (this.#chooser.chance(CATCH_UP)) await this.#catchUp();
  }

  /** The runner's pipeline (a script, then WAIT): the script runs for real, WAIT is answered by the model. */
  #pipeline() {
    const scripts: ["evalsha" | "eval", Arg[]][] = [];
    let waits = false;
    const batch = {
      evalsha(...args: Arg[]) {
        scripts.push(["evalsha", args]);
        return batch;
      },
      eval(...args: Arg[]) {
        scripts.push(["eval", args]);
        return batch;
      },
      wait() {
        waits = true;
        return batch;
      },
      exec: async (): Promise<Reply[]> => {
        const out: Reply[] = [];
        for (const [how, args] of scripts)
          out.push(
            await this.#script(how, args).then<Reply, Reply>(
              (r) => [null, r],
              (e: Error) => [e, null],
            ),
          );
        if (waits) out.push([null, await this.#wait()]);
        return out;
      },
    };
    return batch;
  }

  /** WAIT 1: replicas holding the connection's last write. */
  async #wait(): Promise<number> {
    const needs = this.#lastWrite.get(this.#connection) ?? 0;
    if (needs <= this.#held) return 1;
    if (this.#chooser.chance(WAIT_TIMEOUT)) {
      this.#faults.push({
        kind: "wait-timeout",
        detail: `WAIT timed out: the replica holds write ${this.#held}, not ${needs}`,
      });
      return 0;
    }
    await this.#catchUp();
    return 1;
  }

  async #catchUp(): Promise<void> {
    const keys = [...this.#keys];
    const batch = this.#server.pipeline();
    for (const key of keys) batch.dumpBuffer(key).pttl(key);
    const replies = (await batch.exec()) ?? [];
    const copy = new Map<string, { dump: Buffer; ttlMs: number }>();
    keys.forEach((key, i) => {
      const [dumped, ttl] = [replies[2 * i], replies[2 * i + 1]];
      if (dumped?.[0] || ttl?.[0]) throw dumped?.[0] ?? ttl?.[0];
      const dump = dumped?.[1] as Buffer | null;
      if (dump) copy.set(key, { dump, ttlMs: Math.max(0, Number(ttl?.[1])) });
    });
    this.#copy = copy;
    this.#held = this.#writes;
  }

  /** The replica becomes the server: its copy replaces the history's keys. Clients reconnect: no WAIT is owed. */
  async #failover(): Promise<void> {
    const batch = this.#server.pipeline();
    for (const key of this.#keys) {
      const c = this.#copy.get(key);
      if (c) batch.restore(key, c.ttlMs, c.dump, "REPLACE");
      else batch.del(key);
    }
    for (const [error] of (await batch.exec()) ?? []) if (error) throw error;
    this.#faults.push({
      kind: "failover",
      detail: `FAILOVER: the replica held write ${this.#held} of ${this.#writes}: ${this.#writes - this.#held} writes lost`,
    });
    this.#failedOver = true;
    this.#held = this.#writes;
    this.#lastWrite.clear();
  }
}

/**
 * The store as one history's workers reach it: each guard call on a connection of its own (LaggingReplica). A
 * claim names its call's token; later steps name the fence that claim took.
 */
export class ConnectionPerCallStore implements Store.StateStore {
  readonly engine: string;
  readonly maxResultBytes: number;
  readonly #calls = new Map<string, string>();

  constructor(
    readonly inner: Store.StateStore,
    readonly replica: LaggingReplica,
  ) {
    this.engine = inner.engine;
    this.maxResultBytes = inner.maxResultBytes;
  }

  /** The connection of the guard call that holds `fence` on `key`. */
  connectionOf(key: string, fence: number): string {
    return this.#calls.get(`${key}|${fence}`) ?? `${key}|${fence}`;
  }

  async claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    this.#call(req);
    const res = await this.inner.claim(req);
    // A retry recognised as the landed claim answers with that claim's fence.
    if (res.claimed) this.#calls.set(`${req.key}|${res.fence}`, req.token);
    return res;
  }

  claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    this.#call(req);
    return this.inner.claimAndCommit(req);
  }

  commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    this.replica.on(this.connectionOf(req.key, req.fence));
    return this.inner.commit(req);
  }

  renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    this.replica.on(this.connectionOf(req.key, req.fence));
    return this.inner.renew(req);
  }

  release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    this.replica.on(this.connectionOf(req.key, req.fence));
    return this.inner.release(req);
  }

  read(key: string) {
    return this.inner.read(key);
  }

  canFold(write: Store.AtomicWrite): boolean {
    return this.inner.canFold(write);
  }

  #call(req: ClaimRequest): void {
    this.#calls.set(`${req.key}|${req.fence}`, req.token);
    this.replica.on(req.token);
  }
}
