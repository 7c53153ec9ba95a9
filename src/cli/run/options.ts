import {
  boolean,
  custom,
  integer,
  nested,
  oneOf,
  optionsRule,
  pickFields,
  type Resolved,
  required,
  resolveOptions,
  schemaFor,
  string,
} from "../../core/options.js";
import { INLINE_ENGINE_NAMES } from "../../engines/registry.js";
import { LOCAL_FUNCTION_OPTIONS } from "../../local/delivery/local-function.js";
import { STREAM_EVENT_SOURCE_OPTIONS } from "../../local/delivery/stream-event-source.js";
import { isShare, numberField } from "../../local/fields.js";
import { LOCAL_RUNTIME_OPTIONS, type LocalRuntimeOptions } from "../../local/runtime.js";
import { type FaultOptions, resolveFaults } from "../../sim/live/faults.js";
import {
  type ConnectionFlagNames,
  engineField,
  type ResolvedConnection,
  resolveConnection,
  STATE_CONNECTION_OPTIONS,
  STATE_FLAG_NAMES,
  STATE_STORE_KINDS,
  type StateConnectionOptions,
  type StateStoreKind,
} from "../state/options.js";

/**
 * How events reach the handler. `sns-sqs` (an SNS envelope in an SQS body) is for `messages` only, and so are the
 * streams: `kinesis` puts each message as a record, `dynamodb-streams` writes each to a table whose stream is read.
 */
export const RUN_SOURCES = [
  "direct",
  "sqs",
  "sns-sqs",
  "eventbridge",
  "kinesis",
  "dynamodb-streams",
] as const;
export type RunSource = (typeof RUN_SOURCES)[number];
/** The stream sources: read through Lambda's stream event source mapping (stream-event-source.ts). */
export const STREAM_SOURCES: readonly RunSource[] = ["kinesis", "dynamodb-streams"];

export interface RunHandlerOptions {
  /** `path:export`, like a Lambda handler setting. */
  handler: string;
  /** Default `direct`. */
  source?: RunSource;
  /** Upload every file of this folder … */
  from?: string;
  /** … or every subfolder of this folder in natural order, each a round of versions of its keys … */
  versions?: string;
  /** … or this many generated objects (default 10) … */
  generate?: number;
  /** … or replay these application messages (a JSONL file or a folder, see readMessages) instead. */
  messages?: string;
  /** Messages through a FIFO queue (`sqs`, `sns-sqs`): every message needs a groupId. */
  fifo?: boolean;
  /** Then upload this many of the keys again (new events of the same keys). */
  reuploads?: number;
  /** Input bucket. Default `eonce-input`. */
  bucket?: string;
  /** DynamoDB tables to create (`hashKey` default `pk`). */
  tables?: { name: string; hashKey: string }[];
  /**
   * The guard's state table, read for I2/I3 (any `stateStore`; the user's table for inline state), created on the
   * DynamoDB kinds; sets STATE_TABLE unless `env` has it.
   */
  stateTable?: string;
  /** The engine where the handler keeps the guard's state; default `dynamodb` when any state option is given. */
  stateStore?: StateStoreKind;
  /** The engine's inline mode: the state in the rows of `stateTable` (`--inline`). */
  inline?: boolean;
  /**
   * The state's connection, as `eonce state` takes it (src/cli/state/options.ts). For the handler, each sets the
   * variable its engine names (`Engine.env`: `databaseUrl` DATABASE_URL, `schema` STATE_SCHEMA, `stateFile`
   * STATE_FILE), unless `env` has it.
   */
  keyAttribute?: StateConnectionOptions["keyAttribute"];
  keyColumn?: StateConnectionOptions["keyColumn"];
  databaseUrl?: StateConnectionOptions["databaseUrl"];
  schema?: StateConnectionOptions["schema"];
  stateFile?: StateConnectionOptions["file"];
  rowKey?: StateConnectionOptions["rowKey"];
  rowKeyInverse?: StateConnectionOptions["rowKeyInverse"];
  /**
   * A state server's URL (Valkey: sets the handler's VALKEY_URL unless `env` has it). Without a server's URL (nor
   * its variable), an engine with a `localServer` starts one of the run's own: `--state-store valkey` a Valkey where
   * a server binary is on the PATH, `postgres` (with `--inline` or not) a PostgreSQL (local-state.ts).
   */
  stateUrl?: StateConnectionOptions["url"];
  /** Valkey's key prefix: sets the handler's STATE_KEY_PREFIX unless `env` has it. */
  keyPrefix?: StateConnectionOptions["keyPrefix"];
  /** An output bucket to create; sets OUTPUT_BUCKET unless `env` has it. */
  outputBucket?: string;
  /**
   * For I1: rows of this table carry their event's key in `attribute` (an S3 event's sequencer; a message's body
   * field of that name) and, for durable steps, the step that wrote them in `step` (rows counted per event and step).
   */
  effects?: { table: string; attribute: string; step?: string };
  /**
   * Start the local payments API (PAYMENTS_API_URL) and count its charges for I1: a charge's `orderId` is its event's
   * key, a message's body field of this name (each event charged once at the provider, not just recorded once).
   */
  payments?: string;
  /** The payments API's faults: share of charges whose answer is lost (the charge made), of requests failing (500). */
  paymentsLostRate?: number;
  paymentsFailRate?: number;
  /** The handler's environment (on top of the endpoints). */
  env?: Record<string, string>;
  timeoutMs?: number;
  concurrency?: number;
  /** Records per invocation: SQS 1 to 10 (default 10), streams 1 to 10 000 (default 100). */
  batchSize?: number;
  /** Kinesis: the stream's shards (default 1). */
  shards?: number;
  /** Kinesis: split the first shard after this many messages are put (a reshard mid-run). */
  splitAfter?: number;
  /** Kinesis: share of messages the producer puts twice (a retry after a lost answer: one more sequence number). */
  producerDuplicateRate?: number;
  /** Streams: the event source mapping's settings (stream-event-source.ts). */
  parallelizationFactor?: number;
  wholeBatchRetries?: boolean;
  maxRetryAttempts?: number;
  maxRecordAgeMs?: number;
  /** DynamoDB Streams: the table each message is written to (hash key `pk`). Default `eonce-input-table`. */
  streamTable?: string;
  /** SQS source: queue visibility timeout (s), receives before the DLQ. */
  visibilityTimeoutS?: number;
  maxReceiveCount?: number;
  seed?: number;
  faults?: FaultOptions;
  /**
   * Keep the servers (and what the run left in them: objects, tables, queues) after the report, until the process
   * is interrupted; their endpoints are printed.
   */
  keep?: boolean;
  /** Let Powertools logs and metrics through (default: silenced). */
  logs?: boolean;
  /**
   * A durable function's handler (`path:export`, a `withDurableExecution` handler): each execution the handler (a
   * durable dispatcher) starts at the local Lambda endpoint runs under LocalDurableTestRunner, its end in the report.
   */
  durable?: string;
  /** Use this DynamoDB instead of starting DynamoDB Local (tests). */
  dynamodbEndpoint?: string;
  /** Java for DynamoDB Local. Default `java` on the PATH. */
  javaPath?: string;
  handleSignals?: boolean;
  /** A crashed run's claim when the run ends: `keep` (default) as a crash leaves it, or `release`. */
  crashedClaims?: LocalRuntimeOptions["crashedClaims"];
}

const isText = (v: unknown): v is string => typeof v === "string" && v.length > 0;
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * `eonce run`'s options, field by field. A field with `doc` is also a flag of the command (src/cli/run.ts), named
 * after its key; the function, runtime, event source and fault fields are theirs, shared.
 */
export const RUN_OPTIONS = schemaFor<RunHandlerOptions>()({
  handler: required(string()),
  source: oneOf(RUN_SOURCES, { default: "direct", doc: "how events reach the handler" }),
  from: string({ doc: "upload every file under this folder" }),
  versions: string({
    doc: "upload the subfolders of this folder in order (1/, 2/, …): each a round of new versions of its keys",
  }),
  generate: integer({ min: 0, doc: "upload n generated objects (default 10)" }),
  messages: string({
    doc: "replay messages: JSONL (a body or {body, groupId, dedupId, attributes} a line) or a folder (a file a body)",
  }),
  fifo: boolean({ default: false, doc: "messages through a FIFO queue (every message needs a groupId)" }),
  reuploads: integer({
    min: 0,
    default: 0,
    doc: "then upload n of the keys again (new events of the same keys)",
  }),
  bucket: string({ default: "eonce-input", doc: "input bucket" }),
  tables: custom<{ name: string; hashKey: string }[]>(
    "a list of {name, hashKey}",
    (v) => Array.isArray(v) && v.every((t) => isRecord(t) && isText(t.name) && isText(t.hashKey)),
    { doc: "create a DynamoDB table (repeatable; hash key default pk)" },
  ),
  stateTable: string({
    doc: "the guard's state table (inline kinds: your table): set STATE_TABLE, create it on DynamoDB, check I2/I3 in it",
  }),
  stateStore: engineField(STATE_STORE_KINDS, {
    doc: "the engine where the handler keeps the guard's state, read for I2/I3 (default dynamodb with --state-table)",
  }),
  inline: boolean({
    doc: `the state inline in the rows of --state-table (the engine's inline mode: ${INLINE_ENGINE_NAMES.join(", ")})`,
  }),
  ...pickFields(STATE_CONNECTION_OPTIONS, [
    "keyAttribute",
    "keyColumn",
    "databaseUrl",
    "schema",
    "rowKey",
    "rowKeyInverse",
    "keyPrefix",
  ]),
  stateFile: STATE_CONNECTION_OPTIONS.file,
  stateUrl: STATE_CONNECTION_OPTIONS.url,
  outputBucket: string({ doc: "create an output bucket and set OUTPUT_BUCKET" }),
  effects: custom<{ table: string; attribute: string; step?: string }>(
    "{table, attribute, step?}",
    (v) => isRecord(v) && isText(v.table) && isText(v.attribute) && (v.step === undefined || isText(v.step)),
    {
      doc:
        "count rows per event for I1: attribute holds an S3 event's sequencer, or a message's body field of that " +
        "name; step (durable steps) the step that wrote the row",
    },
  ),
  payments: string({
    doc:
      "start the local payments API (PAYMENTS_API_URL) and count its charges per event for I1: a charge's orderId " +
      "against each message's body field of this name",
  }),
  paymentsLostRate: numberField("a number in [0, 1]", isShare, {
    default: 0,
    doc: "payments API: share of charges whose answer is lost (the charge made)",
  }),
  paymentsFailRate: numberField("a number in [0, 1]", isShare, {
    default: 0,
    doc: "payments API: share of charge requests failing with a 500 before anything is done",
  }),
  env: custom<Record<string, string>>(
    "an object of strings",
    (v) => isRecord(v) && Object.values(v).every((x) => typeof x === "string"),
    { doc: "environment variable for the handler (repeatable)" },
  ),
  ...pickFields(LOCAL_FUNCTION_OPTIONS, ["timeoutMs", "concurrency"]),
  batchSize: integer({
    min: 1,
    max: 10_000,
    doc: "records per invocation (SQS: 1 to 10, default 10; streams: default 100)",
  }),
  shards: integer({ min: 1, max: 16, default: 1, doc: "kinesis: the stream's shards" }),
  splitAfter: integer({ min: 1, doc: "kinesis: split the first shard after n messages are put" }),
  producerDuplicateRate: numberField("a number in [0, 1]", isShare, {
    default: 0,
    doc: "kinesis: share of messages the producer puts twice (a retried PutRecord)",
  }),
  ...pickFields(STREAM_EVENT_SOURCE_OPTIONS, ["parallelizationFactor", "maxRetryAttempts", "maxRecordAgeMs"]),
  wholeBatchRetries: boolean({
    default: false,
    doc: "streams: retry a failed batch whole (default: split it in two first, as the CDK construct sets it)",
  }),
  streamTable: string({
    default: "eonce-input-table",
    doc: "dynamodb-streams: the table each message is written to (hash key pk)",
  }),
  visibilityTimeoutS: integer({
    min: 0,
    doc:
      "SQS visibility timeout (default: the function timeout rounded up to a second, plus 1, the shortest AWS " +
      "accepts and a second: a failed message comes back within seconds)",
  }),
  maxReceiveCount: integer({ min: 0, default: 5, doc: "SQS receives before the dead-letter queue" }),
  ...pickFields(LOCAL_RUNTIME_OPTIONS, [
    "seed",
    "dynamodbEndpoint",
    "javaPath",
    "handleSignals",
    "crashedClaims",
  ]),
  faults: nested(resolveFaults),
  logs: boolean({ default: false, doc: "let the handler's Powertools logs and metrics through" }),
  durable: string({
    doc: "run each durable execution the handler starts under LocalDurableTestRunner (a withDurableExecution handler)",
  }),
  keep: boolean({
    default: false,
    doc: "keep the servers and what the run left in them after the report, until Ctrl-C (endpoints printed)",
  }),
});

/** The state connection's flags as `eonce run` names them (the rest are `eonce state`'s). */
export const RUN_STATE_FLAG_NAMES: ConnectionFlagNames = {
  ...STATE_FLAG_NAMES,
  store: "--state-store",
  table: "--state-table",
  file: "--state-file",
  url: "--state-url",
};

/** The checked options, and where the guard's state is read (undefined: no state option given, I2/I3 not checked). */
export type ResolvedRunOptions = Resolved<typeof RUN_OPTIONS> & {
  state: ResolvedConnection | undefined;
  visibilityTimeoutS: number;
};

/** Eager checks: unknown keys, bad values, exclusive inputs, sources that fit the inputs, the state's connection. */
export function resolveRunOptions(options: RunHandlerOptions): ResolvedRunOptions {
  const o = resolveOptions("eonce run", RUN_OPTIONS, options);
  const rule = (holds: boolean, message: string) => optionsRule("eonce run", holds, message);
  const inputs = [o.from, o.versions, o.generate, o.messages].filter((v) => v !== undefined);
  rule(inputs.length <= 1, "use one of --from, --versions, --generate and --messages");
  const stream = STREAM_SOURCES.includes(o.source);
  rule(
    !stream || o.messages !== undefined,
    `--source ${o.source} replays --messages (uploads do not reach a stream)`,
  );
  rule(
    o.source === "kinesis" || (o.splitAfter === undefined && !o.producerDuplicateRate && o.shards === 1),
    "--shards, --split-after and --producer-duplicate-rate are for --source kinesis",
  );
  rule(
    stream || o.batchSize === undefined || o.batchSize <= 10,
    "--batch-size: an SQS batch holds 1 to 10 messages",
  );
  if (o.messages !== undefined) {
    rule(
      o.source !== "direct",
      "--messages go through --source sqs, sns-sqs, eventbridge, kinesis or dynamodb-streams",
    );
    rule(!o.reuploads, "--reupload is for uploads, not --messages");
  } else {
    rule(o.source !== "sns-sqs", "--source sns-sqs replays --messages (S3 → SNS → SQS is not modelled)");
  }
  rule(!o.fifo || o.messages !== undefined, "--fifo is for --messages");
  rule(!o.fifo || (o.source !== "eventbridge" && !stream), "--fifo needs an SQS source");
  rule(
    o.databaseUrl === undefined || o.env?.DATABASE_URL === undefined,
    "--database-url sets the handler's DATABASE_URL: not with --env DATABASE_URL",
  );
  // The local default is the shortest visibility timeout AWS accepts for an SQS event source (the function timeout),
  // plus a second: a failed message is back within seconds instead of the queue default's 30. A shorter one is
  // taken (AWS would refuse it): it shows what a message reappearing under a live run does.
  const timeoutS = Math.ceil(o.timeoutMs / 1000);
  return { ...o, visibilityTimeoutS: o.visibilityTimeoutS ?? timeoutS + 1, state: stateConnection(o) };
}

/** The run's option of each connection option (the rest are named alike). */
export const RUN_CONNECTION_FIELDS = {
  inline: "inline",
  table: "stateTable",
  keyAttribute: "keyAttribute",
  keyColumn: "keyColumn",
  databaseUrl: "databaseUrl",
  schema: "schema",
  file: "stateFile",
  rowKey: "rowKey",
  rowKeyInverse: "rowKeyInverse",
  url: "stateUrl",
  keyPrefix: "keyPrefix",
} as const satisfies Partial<Record<keyof StateConnectionOptions, keyof RunHandlerOptions>>;

/** The state's connection, checked as `eonce state` checks it, with `eonce run`'s flag names in its messages. */
function stateConnection(o: Resolved<typeof RUN_OPTIONS>): ResolvedConnection | undefined {
  const options = Object.fromEntries(
    Object.entries(RUN_CONNECTION_FIELDS)
      .map(([key, field]) => [key, o[field]])
      .filter(([, v]) => v !== undefined),
  );
  if (o.stateStore === undefined && Object.keys(options).length === 0) return undefined;
  return resolveConnection("eonce run", { store: o.stateStore, ...options }, RUN_STATE_FLAG_NAMES);
}
