import { createHash } from "node:crypto";
import type { ValkeyClient } from "./client.js";
import { isNoScript, ReplicasNotReachedError, valkeyStoreError } from "./errors.js";
import { LUA, LUA_BARRIER, type ScriptName } from "./lua.js";

/** `waitForReplicas`: after each write, WAIT until this many replicas acknowledged it, at most `timeoutMs`. */
export interface WaitForReplicas {
  replicas: number;
  timeoutMs: number;
}

type Arg = string | number;
type Send = (...args: Arg[]) => Promise<unknown>;
interface Batch {
  evalsha(...args: Arg[]): Batch;
  eval(...args: Arg[]): Batch;
  wait(replicas: number, timeoutMs: number): Batch;
  exec(): Promise<[Error | null, unknown][] | null>;
}

type Scripts = Record<ScriptName, { lua: string; sha: string }>;
const withSha = (scripts: Readonly<Record<ScriptName, string>>) =>
  Object.fromEntries(
    Object.entries(scripts).map(([name, lua]) => [
      name,
      { lua, sha: createHash("sha1").update(lua).digest("hex") },
    ]),
  ) as Scripts;
const SCRIPTS = withSha(LUA);
const BARRIER_SCRIPTS = withSha(LUA_BARRIER);

/**
 * Runs the engine's scripts: one EVALSHA per step (one round trip). A server that lacks the script (NOSCRIPT: a
 * restart, SCRIPT FLUSH, a failover to a replica) ran nothing, so the script is sent whole with EVAL, which also
 * caches it: a second round trip, once per server. ioredis's `defineCommand` would do the same, but resends after the
 * WAIT below had already answered, so the WAIT would not cover the write.
 *
 * With `waitForReplicas`, WAIT follows the script in the same pipeline (one round trip, two commands; a pipeline
 * keeps both on the connection, and in a cluster on the node, of the script's key). WAIT counts the replicas that
 * acknowledged every earlier write of the connection (Redis 7.2 and Valkey; up to 7.0, of the server, up to the
 * connection's last command). So the scripts' BARRIER variants (lua.ts `refused`) make a refused step write too:
 * its WAIT then covers what it was refused on, the write it recognises as its own landed attempt (sent on another
 * connection after a reconnect) or another caller's commit.
 */
export class ScriptRunner {
  readonly #client: ValkeyClient;
  readonly #wait: WaitForReplicas | undefined;
  readonly #scripts: Scripts;

  constructor(client: ValkeyClient, wait: WaitForReplicas | undefined) {
    this.#client = client;
    this.#wait = wait;
    this.#scripts = wait ? BARRIER_SCRIPTS : SCRIPTS;
  }

  /** Runs script `name`; errors are StoreErrors naming `op` on `what`. */
  async run(name: ScriptName, op: string, what: string, keys: readonly string[], args: readonly Arg[]) {
    const script = this.#scripts[name];
    const rest: Arg[] = [keys.length, ...keys, ...args];
    try {
      try {
        return await this.#send("evalsha", [script.sha, ...rest], op, what);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return await this.#send("eval", [script.lua, ...rest], op, what);
      }
    } catch (error) {
      throw valkeyStoreError(op, what, error, this.#client);
    }
  }

  async #send(how: "evalsha" | "eval", args: Arg[], op: string, what: string): Promise<unknown> {
    const wait = this.#wait;
    if (!wait) return (this.#client[how] as unknown as Send).apply(this.#client, args);
    const batch = (this.#client.pipeline() as unknown as Batch)
      [how](...args)
      .wait(wait.replicas, wait.timeoutMs);
    const [script, acks] = (await batch.exec()) ?? [];
    if (!script || !acks) throw new Error("the pipeline was discarded");
    if (script[0]) throw script[0];
    if (acks[0]) throw acks[0];
    const acknowledged = Number(acks[1]);
    if (acknowledged < wait.replicas)
      throw new ReplicasNotReachedError(op, what, {
        wanted: wait.replicas,
        acknowledged,
        timeoutMs: wait.timeoutMs,
      });
    return script[1];
  }
}
