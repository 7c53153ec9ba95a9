import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { stateKey } from "../../core/state-key.js";
import { type Backend, counterWrite, type EffectTarget, sinkDescription } from "../../sim/backend.js";
import type { TaggedWrite } from "../../sim/faulty-store.js";
import { quiet } from "../../sim/quiet.js";
import type { SimBackendOptions, SimEnv } from "../engine.js";
import type { ValkeyAtomicWrite } from "./atomic-write.js";
import { TEST_VALKEY_URL } from "./client.js";
import { valkeyHashTag } from "./keys.js";
import { ValkeyOutbox } from "./outbox.js";
import { valkeyForeignTargets, withPatternWriteCheck } from "./sim-foreign.js";
import { ConnectionPerCallStore, LaggingReplica } from "./sim-replica.js";
import { ValkeyFencedSink, valkeyWrite } from "./sink.js";
import { ValkeyStepEffects } from "./step-effects.js";
import { ValkeyStore } from "./store.js";

/**
 * The simulator's clocks are virtual, so the expiries it asks for mean nothing to the server: every record is kept a
 * day (minRetentionMs), and the run's keys are deleted when it ends. TTL deletions are the simulator's own `forget`.
 */
const RETENTION_MS = 24 * 3600 * 1000;

/**
 * One client and one key prefix per run (`eonce-chaos:<uuid>:`), shared by its histories (each names its subjects
 * under its own namespace); `close` deletes the run's keys (SCAN and DEL, never FLUSHALL: the server is shared).
 */
export async function valkeySimEnv(url = TEST_VALKEY_URL): Promise<SimEnv> {
  // ioredis is an optional peer: loaded only when a run asks for valkey.
  const { Redis } = await import("ioredis");
  const client = new Redis(url, { maxRetriesPerRequest: 2 });
  const prefix = `eonce-chaos:${randomUUID()}:`;
  await client.ping();
  let histories = 0;
  return {
    // A prefix per history under the run's: an outbox history's relays find (SCAN, hints) only its own entries.
    backend: (o) => valkeyBackend(client, `${prefix}h${histories++}:`, o),
    close: async () => {
      await deleteByPrefix(client, prefix);
      await client.quit();
    },
  };
}

async function deleteByPrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== "0");
}

/** The counter of `e`: a list of the fences that applied it, in the event's slot. */
function counterKey(prefix: string, e: EffectTarget): string {
  return `${prefix}count${valkeyHashTag(e.key)}:${e.counterId}`;
}

/** The store's WAIT under `--failover --wait-for-replicas`: answered by the replica model (sim-replica.ts). */
const SIM_WAIT = { replicas: 1, timeoutMs: 1 };

/**
 * The Valkey store, its fenced sink (a string per subject, `<fence>:<position>`, in the subject's slot) and a counter
 * whose folded effect is an unfenced RPUSH of the fence, so a second application shows as a count of 2. Both effects
 * are keyed by the event's state key's hash tag, as a commit folds only writes in its state key's slot. Every script
 * is real; the scheduler waits for each. With `failover`, the store reaches the server through a lagging replica's
 * model (sim-replica.ts), which fails it over once. Some histories find a foreign value in one event's counter
 * (sim-foreign.ts); `brokenWriteCheck` runs the scripts with the pattern check of before the server's rules.
 */
export function valkeyBackend(client: Redis, prefix: string, o: SimBackendOptions): Backend {
  const replica = o.failover ? new LaggingReplica(client, o.failover) : undefined;
  const served = replica?.client ?? client;
  const store = new ValkeyStore({
    client: o.brokenWriteCheck ? withPatternWriteCheck(served as Redis) : served,
    keyPrefix: prefix,
    minRetentionMs: RETENTION_MS,
    ...(o.failover?.waitForReplicas ? { waitForReplicas: SIM_WAIT } : {}),
  });
  const shared = replica ? new ConnectionPerCallStore(store, replica) : undefined;
  const sink = new ValkeyFencedSink({ store });
  // Broken on purpose (`unfencedSink`): the row takes every write.
  const sinkWrite = (e: EffectTarget, pos: string, fence: number): ValkeyAtomicWrite => {
    const key = `${prefix}sink${valkeyHashTag(e.key)}`;
    const row = `${fence}:${pos}`;
    const description = sinkDescription(e, pos, fence);
    if (o.unfencedSink) return valkeyWrite(store, "set", key, row, "", description);
    return { ...sink.set({ position: pos, fence }, key, row), description };
  };
  return {
    name: "valkey",
    store: shared ?? store,
    sinkReportsItself: false,
    counter: (e, fence) => ({
      ...valkeyWrite(store, "rpush", counterKey(prefix, e), String(fence)),
      ...counterWrite("valkey", e, fence, {}),
    }),
    sinkAtomic: (e, pos, fence): TaggedWrite & ValkeyAtomicWrite => ({
      ...sinkWrite(e, pos, fence),
      chaos: { subject: e.subject, pos, fence },
    }),
    sinkPut: (e, pos, fence) => {
      replica?.on(shared?.connectionOf(e.key, fence) ?? "");
      return sink.put(sinkWrite(e, pos, fence));
    },
    ...readers(client, prefix, store),
    forget: async (key) => {
      if (replica) await replica.del(store.redisKeyOf(key));
      else await client.del(store.redisKeyOf(key));
    },
    ...(replica ? { serverFaults: () => replica.faults() } : {}),
    stepEffects: (clock) =>
      new ValkeyStepEffects({ client: replica?.client ?? client, keyPrefix: prefix, clock, ...quiet() }),
    foreign: valkeyForeignTargets(client, prefix, store),
    outbox: async () => {
      const outbox = new ValkeyOutbox({ store });
      return { outbox, reader: async () => outbox };
    },
  };
}

/** What the checks read: the server as it is (no fault touches a read). */
function readers(client: Redis, prefix: string, store: ValkeyStore) {
  return {
    readCounter: async (e: EffectTarget) => {
      const fences = (await client.lrange(counterKey(prefix, e), 0, -1)).map(Number);
      return { count: fences.length, fences };
    },
    readSink: async (subject: string) => {
      const row = await client.get(`${prefix}sink${valkeyHashTag(stateKey(subject, "", true))}`);
      if (row === null) return undefined;
      const at = row.indexOf(":");
      return { fence: Number(row.slice(0, at)), pos: row.slice(at + 1) };
    },
    readState: async (key: string) => {
      const hash = await client.hgetall(store.redisKeyOf(key));
      const fields = Object.entries(hash);
      const bytes = fields.reduce((n, [f, v]) => n + Buffer.byteLength(f) + Buffer.byteLength(v), 0);
      return { state: await store.read(key), bytes: fields.length > 0 ? bytes : undefined };
    },
  };
}
