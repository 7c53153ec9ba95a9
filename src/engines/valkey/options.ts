import { integer, nested, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import { clientField, type ValkeyClient } from "./client.js";
import { KEY_PREFIX_PATTERN } from "./keys.js";
import type { WaitForReplicas } from "./runner.js";

/** The options of `ValkeyStore`. */
export interface ValkeyStoreOptions {
  /** An ioredis `Redis` or `Cluster` (docs/decisions/0008-valkey-client.md), without a `keyPrefix` of its own. */
  client: ValkeyClient;
  /**
   * The start of every key the store writes: state hashes `<prefix>{<state key>}`, sink stamps `<prefix>{<tag>}w`
   * (docs/valkey.md). Printable ASCII without braces or glob characters. Default `eonce:`.
   */
  keyPrefix?: string;
  /** Largest stored result; default the DynamoDB store's, so a pipeline behaves alike on either. */
  maxResultBytes?: number;
  /**
   * The least time (ms, by the server's clock) a record is kept after each write, whatever its `expiresAtSeconds`.
   * The server deletes a key at its expiry to the millisecond (DynamoDB's TTL days later), and an expiry set by a
   * writer whose clock is behind, or a virtual one (the simulator), could delete a record at once. Default 0.
   */
  minRetentionMs?: number;
  /**
   * After every write, WAIT until this many replicas acknowledged it, at most `timeoutMs`; fewer is a retryable
   * `ReplicasNotReachedError`. Narrows, but does not close, the window in which a failover loses an acknowledged
   * step (docs/valkey.md). Default: no WAIT.
   */
  waitForReplicas?: WaitForReplicas;
}

const WAIT_OPTIONS = schemaFor<WaitForReplicas>()({
  replicas: required(integer({ min: 1 })),
  // 0 would make WAIT block for ever.
  timeoutMs: required(integer({ min: 1 })),
});

export const VALKEY_STORE_OPTIONS = schemaFor<ValkeyStoreOptions>()({
  client: clientField,
  keyPrefix: string({
    default: "eonce:",
    pattern: KEY_PREFIX_PATTERN,
    expected: "1 to 64 printable ASCII characters without braces, *, ?, [, ] or \\",
  }),
  maxResultBytes: integer({ min: 1, max: 64 * 1024 * 1024, default: DYNAMODB_MAX_RESULT_BYTES }),
  minRetentionMs: integer({ min: 0, default: 0 }),
  waitForReplicas: nested((value: WaitForReplicas) =>
    resolveOptions("ValkeyStore waitForReplicas", WAIT_OPTIONS, value),
  ),
});
