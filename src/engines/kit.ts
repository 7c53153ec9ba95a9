import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { InlineRowMapping, StateAdmin } from "../core/state-admin.js";
import type { Backend } from "../sim/backend.js";
import type { Chooser } from "../sim/chooser.js";
import type { EngineConnection } from "./connection.js";

/** What the caller of `openAdmin` already has. */
export interface OpenAdminContext {
  /** DynamoDB engines: a client to use (the admin owns it: `close` destroys it). */
  dynamodb?: DynamoDBClient;
  /** Inline engines: the custom row mapping, loaded from `rowKey` / `rowKeyInverse`. */
  mapping?: InlineRowMapping;
  /** An engine's client library is missing (an optional peer): the error to throw, worded for the command. */
  missingPeer(peer: string, cause: unknown): Error;
  /** The operator named something that is not there (a file, a table): the error to throw. */
  usage(message: string): Error;
}

/** What one simulated history needs of its engine (src/sim/campaign.ts). */
export interface SimBackendOptions {
  onSinkLanded(subject: string, pos: string, fence: number): void;
  /** Broken on purpose (tests, memory): the sink ignores position and fence. */
  unfencedSink?: boolean;
  /** Broken on purpose (tests, inline engines): state keys map to rows with this. */
  rowKey?: (stateKey: string) => string;
  /** The failover fault (`--failover`; Valkey): drawn from the history's chooser. */
  failover?: FailoverOptions;
  /**
   * Broken on purpose (`--break pattern-write-check`; engines with foreign targets): a commit's writes are checked
   * by a pattern, not as the server will run them, so a write over a foreign value can fail after earlier ones.
   */
  brokenWriteCheck?: boolean;
}

/** A server that fails over to a lagging replica, once per history (src/engines/valkey/sim-replica.ts). */
export interface FailoverOptions {
  chooser: Chooser;
  /** The store WAITs for a replica after each step (`waitForReplicas`), and WAIT may time out. */
  waitForReplicas: boolean;
}

/** A simulator run's server-side environment (tables, a schema), shared by its histories. */
export interface SimEnv {
  backend(o: SimBackendOptions): Backend;
  close(): Promise<void>;
}

/**
 * Everything the tools need of one engine, loaded only when that engine is asked for (src/engines/registry.ts).
 * The store and sink themselves are the engine's public API (its `index.ts`); the kit is how the CLI, the simulator
 * and `eonce run` reach them without knowing the engine.
 */
export interface EngineKit {
  /** The operator's view of the state (`eonce state`, `eonce run`'s invariant checks). */
  openAdmin(c: EngineConnection, context: OpenAdminContext): Promise<StateAdmin>;
  /**
   * `eonce run` owns the engine's server (its DynamoDB Local): create what the handler expects to find. Engines
   * whose tables the handler creates (SQL migrations on a cold start) have none.
   */
  prepareRunState?(c: EngineConnection, dynamodbEndpoint: string): Promise<void>;
  /** The simulator's environment for a run (`npm run chaos -- --store <name>`). */
  openSimEnv(o: { endpoint?: string }): Promise<SimEnv>;
  /** How a connection is named in reports: `postgres public.eonce_state`. */
  where(c: EngineConnection): string;
}
