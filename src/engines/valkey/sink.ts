import { OptionsError } from "../../core/errors.js";
import { type FenceSource, fencedPosition } from "../../core/fence.js";
import { custom, required, resolveOptions, schemaFor } from "../../core/options.js";
import type { Position } from "../../core/position.js";
import {
  clientId,
  isValkeyAtomicWrite,
  type ValkeyAtomicWrite,
  type ValkeyWriteOp,
  writeParams,
} from "./atomic-write.js";
import { valkeyStoreError } from "./errors.js";
import { requireHashTag, stampField, stampRedisKey } from "./keys.js";
import { internalsOf, ValkeyStore } from "./store.js";
import { assertWriteOperands } from "./write-rules.js";

/** What a fenced write needs from the guard's context: the event's position and the claim's fence. */
export type ValkeyFenceSource = FenceSource;

/** The options of `ValkeyFencedSink`. */
export interface ValkeyFencedSinkOptions {
  /** The store whose server holds the targets (so its commits can fold the writes) and whose key prefix the stamps share. */
  store: ValkeyStore;
}

const SINK_OPTIONS = schemaFor<ValkeyFencedSinkOptions>()({
  store: required(custom<ValkeyStore>("a ValkeyStore", (v) => v instanceof ValkeyStore)),
});

const WHAT = "ValkeyFencedSink";

/**
 * Writes to Valkey keys that land in position order whatever the arrival order: a string (SET), a hash field (HSET),
 * a counter (INCRBY), a sorted-set member (ZADD). Each target keeps a stamp, the position and fence of the write
 * that landed last, in the hash `<prefix>{<tag>}w` (keys.ts), and a write lands only over an older stamp (the
 * fenced sinks' one rule, docs/decisions/0007-one-positionless-rule-for-sinks.md); else it is `stale`. A target
 * without a stamp (written by something else) takes any write. Stamps are never deleted: a target deleted and
 * written again by a zombie would take its old work otherwise.
 *
 * Each method builds a write: fold it into the guard's commit (`ctx.atCommit(sink.set(ctx, key, v))`), where it
 * runs in the commit's script, atomic with it, or run it now, alone, with `put`. A key must carry a hash tag; to
 * fold, the state key's own (`valkeyHashTag(ctx.stateKey)`), since one script touches one slot. One target is
 * written by one subject only: positions compare within a subject. A counter folded into the commit counts once per
 * committed event; `put` of an increment counts again when the event runs again after a crash.
 */
export class ValkeyFencedSink {
  readonly #store: ValkeyStore;

  constructor(options: ValkeyFencedSinkOptions) {
    this.#store = resolveOptions(WHAT, SINK_OPTIONS, options).store;
  }

  /** SET `key` to `value`. */
  set(ctx: ValkeyFenceSource, key: string, value: string): ValkeyAtomicWrite {
    return this.#write(ctx, "set", key, undefined, [text("value", value), ""], `set ${key}`);
  }

  /** HSET `field` of the hash `key` to `value` (each field has a stamp of its own). */
  hset(ctx: ValkeyFenceSource, key: string, field: string, value: string): ValkeyAtomicWrite {
    const f = text("field", field);
    return this.#write(ctx, "hset", key, f, [f, text("value", value)], `hset ${key} ${f}`);
  }

  /** INCRBY `key` by `by` (an integer, default 1). */
  increment(ctx: ValkeyFenceSource, key: string, by = 1): ValkeyAtomicWrite {
    if (!Number.isSafeInteger(by)) throw new OptionsError(`${WHAT}: an increment must be a safe integer`);
    return this.#write(ctx, "incr", key, undefined, [String(by), ""], `incr ${key} by ${by}`);
  }

  /** ZADD `member` to the sorted set `key` with `score` (a number, or ±Infinity; each member has a stamp of its own). */
  zadd(ctx: ValkeyFenceSource, key: string, score: number, member: string): ValkeyAtomicWrite {
    if (typeof score !== "number") throw new OptionsError(`${WHAT}: a score must be a number`);
    assertWriteOperands(WHAT, "zadd", String(score));
    const m = text("member", member);
    return this.#write(ctx, "zadd", key, m, [String(score), m], `zadd ${key} ${m}`);
  }

  /** Runs `write` now, in its own script (a handler's effect outside the commit): `stale` over newer work. */
  async put(write: ValkeyAtomicWrite): Promise<"applied" | "stale"> {
    const { client, runner } = internalsOf(this.#store);
    if (!isValkeyAtomicWrite(write) || write.client !== clientId(client))
      throw new OptionsError(`${WHAT}.put: not a write for this store's client`);
    const { keys, args } = writeParams([write]);
    const out = await runner.run("put", "sink write", write.key, keys, args);
    return out === 1 ? "applied" : "stale";
  }

  /** The stamp of the write that landed last on `key` (and `member`: a hash field or sorted-set member). */
  async stamp(key: string, member?: string): Promise<{ position: Position; fence: number } | undefined> {
    const { client, keyPrefix } = internalsOf(this.#store);
    const tag = requireHashTag(WHAT, key, keyPrefix);
    let v: string | null;
    try {
      v = await client.hget(stampRedisKey(keyPrefix, tag), stampField(key, member));
    } catch (error) {
      throw valkeyStoreError("stamp read", key, error);
    }
    if (v === null) return undefined;
    const at = v.indexOf(":");
    return { fence: Number(v.slice(0, at)), position: v.slice(at + 1) };
  }

  #write(
    ctx: ValkeyFenceSource,
    op: ValkeyWriteOp,
    key: string,
    member: string | undefined,
    args: [string, string],
    description: string,
  ): ValkeyAtomicWrite {
    const position = fencedPosition(WHAT, ctx);
    const { client, keyPrefix } = internalsOf(this.#store);
    const tag = requireHashTag(WHAT, key, keyPrefix);
    const stamp = {
      key: stampRedisKey(keyPrefix, tag),
      field: stampField(key, member),
      position,
      fence: ctx.fence,
    };
    return { engine: "valkey", description, client: clientId(client), op, key, tag, stamp, args };
  }
}

/**
 * A write without a stamp, to fold into a commit (like `postgresWrite`): it always applies, so a second application
 * shows (the simulator's counter is one). `rpush`, `sadd`: `x` is the element; the others as ValkeyFencedSink. An
 * unknown `op`, an `incr` whose `x` is not an integer Redis takes (`"007"`, `"+1"`, past int64) and a `zadd` whose
 * score is not a number Redis takes are refused here (`OptionsError`), by the rules the scripts check them with
 * (write-rules.ts).
 */
export function valkeyWrite(
  store: ValkeyStore,
  op: ValkeyWriteOp,
  key: string,
  x: string,
  y = "",
  description = `${op} ${key}`,
): ValkeyAtomicWrite {
  const tag = requireHashTag("valkeyWrite", key, internalsOf(store).keyPrefix);
  if (op === ("fence" as ValkeyWriteOp))
    throw new OptionsError('valkeyWrite: unknown write operation "fence"');
  assertWriteOperands("valkeyWrite", op, x);
  const client = clientId(internalsOf(store).client);
  return { engine: "valkey", description, client, op, key, tag, args: [text("x", x), y] };
}

function text(name: string, value: unknown): string {
  if (typeof value !== "string") throw new OptionsError(`${WHAT}: the ${name} must be a string`);
  return value;
}
