import type { Cluster, Redis } from "ioredis";
import { custom, required } from "../../core/options.js";

/**
 * The client the engine runs on: an ioredis `Redis` (one server, or Sentinel) or `Cluster` (Redis Cluster,
 * ElastiCache cluster mode), decision record docs/decisions/0008-valkey-client.md. Only its type is imported: ioredis
 * is an optional peer, loaded by whoever makes the client.
 */
export type ValkeyClient = Redis | Cluster;

function isClient(value: unknown): boolean {
  const c = value as Partial<Redis> | null;
  return (
    typeof c?.evalsha === "function" && typeof c.pipeline === "function" && typeof c.hgetall === "function"
  );
}

/**
 * A client without ioredis's own `keyPrefix`: it would prefix the scripts' keys but not `list`'s SCAN pattern, and
 * could add a hash tag of its own; the store's `keyPrefix` is the one prefix.
 */
export const optionalClientField = custom<ValkeyClient>(
  "an ioredis Redis or Cluster client without a keyPrefix of its own",
  (v) => {
    if (!isClient(v)) return false;
    const prefix = (v as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
    return prefix === undefined || prefix === "";
  },
);
export const clientField = required(optionalClientField);

/** The server on this machine, where no URL is given (Valkey's and Redis's default port). */
export const LOCAL_VALKEY_URL = "redis://127.0.0.1:6379";

/** The server the simulator, the engine's tests and its bench use: `EONCE_VALKEY_URL`, else this machine's. */
export const TEST_VALKEY_URL = process.env.EONCE_VALKEY_URL ?? LOCAL_VALKEY_URL;

/** The servers that hold keys: the cluster's primaries, or the one server. */
export function primaries(client: ValkeyClient): Redis[] {
  return client.isCluster ? (client as Cluster).nodes("master") : [client as Redis];
}
