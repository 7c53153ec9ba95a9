import { randomUUID } from "node:crypto";
import { UnsupportedAtomicWriteError } from "../../core/errors.js";
import type { AtomicWrite, WriteOutcome } from "../../core/store.js";
import type { ValkeyClient } from "./client.js";
import { assertWriteOperands } from "./write-rules.js";

/** What a sink write does to its target: SET, HSET, INCRBY, ZADD; unfenced also RPUSH, SADD (`valkeyWrite`). */
export type ValkeyWriteOp = "set" | "hset" | "incr" | "zadd" | "rpush" | "sadd";

/**
 * A write a Valkey store runs inside its commit's script (and `apply`'s), after the state's condition held and
 * before the state is written: effect and commit land together or not at all. Fenced writes (ValkeyFencedSink) land
 * only over older work and are otherwise `stale`; unfenced ones (`valkeyWrite`) always apply.
 */
export interface ValkeyAtomicWrite extends AtomicWrite {
  readonly engine: "valkey";
  /** The client it was made for (`clientId`): a store folds only writes to its own server. */
  readonly client: string;
  /** `fence`: a durable execution's fence move (`ValkeyStepEffects.fenceWrite`), args position and execution. */
  readonly op: ValkeyWriteOp | "fence";
  readonly key: string;
  /** The key's hash tag: a commit folds only writes tagged as its state key (one slot per script). */
  readonly tag: string;
  /** A fenced write's stamp: where it is kept, and the writer's position and fence. */
  readonly stamp?: {
    readonly key: string;
    readonly field: string;
    readonly position: string;
    readonly fence: number;
  };
  /** The operation's arguments: the value; field and value; the increment; score and member. */
  readonly args: readonly [string, string];
}

const ids = new WeakMap<object, string>();

/** A name for `client` that a write can carry through copies and traces (the client itself would not print). */
export function clientId(client: ValkeyClient): string {
  let id = ids.get(client);
  if (id === undefined) {
    id = `valkey-${randomUUID()}`;
    ids.set(client, id);
  }
  return id;
}

/** Whether `write` is a Valkey write the Valkey store can fold into its commit's script. */
export function isValkeyAtomicWrite(write: AtomicWrite): write is ValkeyAtomicWrite {
  const w = write as Partial<ValkeyAtomicWrite>;
  return (
    write.engine === "valkey" &&
    typeof w.op === "string" &&
    typeof w.key === "string" &&
    Array.isArray(w.args)
  );
}

/**
 * The writes of a commit of `stateTag` on `client`, checked: Valkey writes to the same server, in the state key's
 * slot (its hash tag). Anything else cannot be in the commit's script.
 */
export function foldable(
  client: ValkeyClient,
  stateTag: string,
  writes: readonly AtomicWrite[] | undefined,
): ValkeyAtomicWrite[] {
  return (writes ?? []).map((w) => {
    if (!isValkeyAtomicWrite(w))
      throw new UnsupportedAtomicWriteError(`ValkeyStore cannot fold a ${w.engine} write`);
    if (w.client !== clientId(client))
      throw new UnsupportedAtomicWriteError(
        "ValkeyStore folds only writes made for its own client (its server)",
      );
    if (w.tag !== stateTag)
      throw new UnsupportedAtomicWriteError(
        `ValkeyStore folds only writes in the state key's slot: ${w.key} is not tagged {${stateTag}} (valkeyHashTag)`,
      );
    return w;
  });
}

/**
 * The script's keys and arguments of `writes` (src/engines/valkey/lua.ts: two keys and six arguments each). A write
 * made by hand rather than by `valkeyWrite` or the sink is checked here by the same rules (write-rules.ts).
 */
export function writeParams(writes: readonly ValkeyAtomicWrite[]): { keys: string[]; args: string[] } {
  const keys: string[] = [];
  const args: string[] = [];
  for (const w of writes) {
    assertWriteOperands(w.description, w.op, w.args[0]);
    // An unfenced write names its target twice: the stamp key is never touched.
    keys.push(w.stamp?.key ?? w.key, w.key);
    args.push(w.op, w.stamp?.field ?? "", w.stamp?.position ?? "", String(w.stamp?.fence ?? ""), ...w.args);
  }
  return { keys, args };
}

/** The writes' outcomes as a script answers them: 1 applied, anything else stale (a fenced write over newer work). */
export function writeOutcomes(
  writes: readonly ValkeyAtomicWrite[],
  outcomes: readonly number[] | undefined,
): WriteOutcome[] {
  return writes.map((w, i) => ({
    description: w.description,
    status: outcomes?.[i] === 1 ? "applied" : "stale",
  }));
}
