import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * The public surface, pinned: the runtime names each subpath of package.json's `exports` gives. A name added or
 * removed here is a change of the package's API; internals (option validators, item codecs, formatting helpers)
 * must not appear. Types are checked by the consumer test (test/consumer.test.ts) type-checking against them.
 */
const PUBLIC: Record<string, string[]> = {
  ".": [
    "DynamoDBFencedSink",
    "DynamoDBStepEffects",
    "updateEffect",
    "DynamoDBStore",
    "EffectivelyOnceError",
    "EffectRefusedError",
    "TransactionLimitError",
    "InvalidPositionError",
    "InvalidSequencerError",
    "LeaseLostError",
    "MAX_POSITION_LENGTH",
    "MAX_STATE_KEY_BYTES",
    "MalformedEventError",
    "MalformedKeyError",
    "requireKeyText",
    "EFFECT_KEY_PREFIX",
    "effectKey",
    "MemoryStore",
    "NUMERIC_POSITION_WIDTH",
    "OptionsError",
    "ResultSerializationError",
    "SEQUENCER_WIDTH",
    "STATE_KEY_ATTRIBUTE",
    "StoreError",
    "SubjectTooLongError",
    "TTL_ATTRIBUTE",
    "UNORDERED_POSITION",
    "UnsupportedAtomicWriteError",
    "classifyRefusal",
    "comparePositions",
    "compareSequencers",
    "countRequests",
    "createGuard",
    "createStateTable",
    "createTableIfMissing",
    "isClaimable",
    "isDynamoDBAtomicWrite",
    "normalizeSequencer",
    "positionFromDate",
    "positionFromNumber",
    "positionFromSequenceNumber",
    "MAX_SEQUENCE_NUMBER_DIGITS",
    "s3Identity",
    "s3Operation",
    "s3Subject",
    "stateKey",
    "inlineRowKey",
    "stateKeyOfInlineRow",
    "toPosition",
    "LeaseUnconfirmedError",
    "OUTCOMES",
    "assertPosition",
    "claimAllowed",
    "describeClaim",
    "isAcknowledged",
    "isDeliveryStatus",
    "ACKNOWLEDGED_STATUSES",
    "DELIVERY_STATUSES",
    "GUARD_OUTCOME_STATUSES",
    "RETRIED_STATUSES",
    "isOwnClaim",
    "leaseExpired",
    "positionBefore",
    "systemClock",
    "unknownWrites",
    "INLINE_RESERVED_PREFIX",
    "INLINE_STATE_ATTRIBUTES",
    "InlineDynamoDBStore",
    "DynamoDBOutbox",
    "isDynamoDBOutboxWrite",
    "createOutboxTable",
    "OUTBOX_ATTRIBUTES",
    "OUTBOX_PENDING_INDEX",
    "OUTBOX_UNSENT_INDEX",
    "outboxStreamHandler",
  ],
  "./core": [
    "EffectivelyOnceError",
    "EffectRefusedError",
    "TransactionLimitError",
    "InvalidPositionError",
    "InvalidSequencerError",
    "LeaseLostError",
    "MAX_POSITION_LENGTH",
    "MAX_STATE_KEY_BYTES",
    "MalformedEventError",
    "MalformedKeyError",
    "requireKeyText",
    "EFFECT_KEY_PREFIX",
    "effectKey",
    "NUMERIC_POSITION_WIDTH",
    "OptionsError",
    "ResultSerializationError",
    "SEQUENCER_WIDTH",
    "StoreError",
    "SubjectTooLongError",
    "UNORDERED_POSITION",
    "UnsupportedAtomicWriteError",
    "classifyRefusal",
    "comparePositions",
    "compareSequencers",
    "createGuard",
    "isClaimable",
    "normalizeSequencer",
    "positionFromDate",
    "positionFromNumber",
    "positionFromSequenceNumber",
    "MAX_SEQUENCE_NUMBER_DIGITS",
    "s3Identity",
    "s3Operation",
    "s3Subject",
    "stateKey",
    "inlineRowKey",
    "stateKeyOfInlineRow",
    "toPosition",
    "LeaseUnconfirmedError",
    "OUTCOMES",
    "assertPosition",
    "claimAllowed",
    "describeClaim",
    "isAcknowledged",
    "isDeliveryStatus",
    "ACKNOWLEDGED_STATUSES",
    "DELIVERY_STATUSES",
    "GUARD_OUTCOME_STATUSES",
    "RETRIED_STATUSES",
    "isOwnClaim",
    "leaseExpired",
    "positionBefore",
    "systemClock",
  ],
  "./sources": [
    "MAX_S3_KEY_BYTES",
    "decodeS3NotificationKey",
    "encodeS3NotificationKey",
    "isObjectReplaced",
    "parseInvocation",
    "s3ObjectInput",
  ],
  "./engines/dynamodb": [
    "DynamoDBStepEffects",
    "DynamoDBFencedSink",
    "updateEffect",
    "DynamoDBStore",
    "STATE_KEY_ATTRIBUTE",
    "TTL_ATTRIBUTE",
    "createStateTable",
    "createTableIfMissing",
    "isDynamoDBAtomicWrite",
    "INLINE_RESERVED_PREFIX",
    "INLINE_STATE_ATTRIBUTES",
    "InlineDynamoDBStore",
    "DynamoDBOutbox",
    "isDynamoDBOutboxWrite",
    "createOutboxTable",
    "OUTBOX_ATTRIBUTES",
    "OUTBOX_PENDING_INDEX",
    "OUTBOX_UNSENT_INDEX",
    "outboxStreamHandler",
  ],
  "./engines/memory": ["MemoryStore"],
  "./engines/postgres": [
    "INLINE_POSTGRES_COLUMNS",
    "InlinePostgresStore",
    "PostgresFencedSink",
    "PostgresStore",
    "deleteExpired",
    "isPostgresAtomicWrite",
    "isRetryablePostgresError",
    "MigrationLockTimeoutError",
    "migrate",
    "migrateInline",
    "OutboxTableMissingError",
    "PostgresOutbox",
    "postgresWrite",
    "PostgresStepEffects",
    "createPostgresStepEffectsTable",
  ],
  "./engines/sqlite": [
    "SqliteFencedSink",
    "SqliteOutbox",
    "SqliteStepEffects",
    "SqliteStore",
    "isSqliteAtomicWrite",
  ],
  "./engines/valkey": [
    "ValkeyStepEffects",
    "ReplicasNotReachedError",
    "ValkeyFencedSink",
    "ValkeyOutbox",
    "ValkeyStateAdmin",
    "ValkeyStore",
    "ValkeyWriteRefusedError",
    "isRetryableValkeyError",
    "isValkeyAtomicWrite",
    "valkeyHashTag",
    "valkeyWrite",
  ],
  "./sinks/s3": ["S3FencedSink", "S3SinkBodyTooLargeError", "S3SinkConflictError", "S3_SINK_METADATA"],
  "./lambda": [
    "DeliveryFailedError",
    "LambdaDeadlineError",
    "MAX_FIFO_ID_LENGTH",
    "VISIBILITY_HEARTBEAT_KEYS",
    "VisibilityHeartbeat",
    "answer",
    "eventBridgeHandler",
    "kinesisHandler",
    "dynamodbStreamHandler",
    "fifoId",
    "fifoMessageIds",
    "queueUrlAtEndpoint",
    "queueUrlFromArn",
    "resolveVisibilityHeartbeatOptions",
    "s3Handler",
    "sendFifoMessage",
    "sqsHandler",
    "wrapHandler",
  ],
  "./lambda/middy": ["eachEvent", "effectivelyOnce"],
  "./durable": [
    "DURABLE_EXECUTION_NAME_PATTERN",
    "DurableExecutionConflictError",
    "DurableStartError",
    "DynamoDBStepEffects",
    "NotDispatchedError",
    "PayloadValueError",
    "PostgresStepEffects",
    "SqliteStepEffects",
    "StepEffects",
    "StepEffectsNotReadyError",
    "ValkeyStepEffects",
    "canonicalJson",
    "createPostgresStepEffectsTable",
    "dispatchedExecution",
    "durableEventBridgeDispatcher",
    "durableExecutionName",
    "durableS3Dispatcher",
    "durableSqsDispatcher",
    "nextStepIdentity",
    "stepEffectKey",
  ],
  "./outbox": [
    "EventBridgeEntryFailedError",
    "OUTBOX_MESSAGE_ID_ATTRIBUTE",
    "OutboxEntryInvalidError",
    "OutboxSendError",
    "awsOutboxSender",
    "outboxMessageId",
    "relayOutbox",
    "startOutboxRelay",
  ],
  "./observe": [
    "CORRELATION_ID_KEY",
    "COUNTERS",
    "DEFAULT_NAMESPACE",
    "DeliveryObserver",
    "HANDLER_DURATION_METRIC",
    "InvocationMetrics",
    "InvocationObserver",
    "Observer",
    "PIPELINE_DIMENSION",
    "RECEIVE_COUNT_METRIC",
    "SERVICE_DIMENSION",
    "countRequests",
    "defaultMetrics",
  ],
  "./local": [
    "AsyncInvoker",
    "BucketNotifications",
    "FaultInjector",
    "InjectedFailure",
    "LocalFunction",
    "LocalRuntime",
    "NO_FAULTS",
    "NO_RUN_FAULTS",
    "RuntimeStoppedError",
    "S3NotificationFactory",
    "SqsEventSource",
    "StreamEventSource",
    "Trace",
    "createLambdaContext",
    "createPrng",
    "currentInvocation",
    "faultPoint",
    "instrumentStore",
    "invocationSignal",
    "resolveFaults",
    "scanTable",
    "toEventBridgeEvent",
    "toLambdaRecord",
  ],
  "./cdk": [
    "DELIVERIES",
    "ENV",
    "EffectivelyOncePipeline",
    "HANDLER_DURATION_METRIC",
    "LOG_QUERIES",
    "METRIC_NAMESPACE",
    "MIN_MAX_RECEIVE_COUNT",
    "OUTCOME_METRICS",
    "PIPELINE_DIMENSION",
    "QUEUE_CONSUMER_ACTIONS",
    "RECEIVE_COUNT_METRIC",
    "RECORDS_TABLE_ACTIONS",
    "RUNTIME",
    "SERVICE_DIMENSION",
    "STATE_KEY_ATTRIBUTE",
    "STATE_TABLE_ACTIONS",
    "STREAM_VIEW_TYPES",
    "TTL_ATTRIBUTE",
    "VISIBILITY_TIMEOUT_FACTOR",
  ],
};

const INTERNAL = [
  "rejectUnknownKeys",
  "requirePositiveInteger",
  "requireOneOf",
  "GUARD_PASS_THROUGH_KEYS",
  "toRecord",
  "attemptAttribute",
  "describe",
];

/**
 * The subpaths of 0.x, kept for one minor version (CHANGELOG.md): each is the same module as the engine subpath
 * that replaced it (`./sinks/dynamodb` is the DynamoDB engine's sink module, a subset of `./engines/dynamodb`).
 */
const DEPRECATED_ALIASES: Record<string, { target: string; module: string }> = {
  "./stores/dynamodb": { target: "./engines/dynamodb", module: "./dist/engines/dynamodb/index.js" },
  "./stores/memory": { target: "./engines/memory", module: "./dist/engines/memory/store.js" },
  "./stores/postgres": { target: "./engines/postgres", module: "./dist/engines/postgres/index.js" },
  "./stores/sqlite": { target: "./engines/sqlite", module: "./dist/engines/sqlite/index.js" },
  "./sinks/dynamodb": { target: "./engines/dynamodb", module: "./dist/engines/dynamodb/sink.js" },
};

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  exports: Record<string, { types: string; import: string }>;
};

/** `./dist/local/index.js` → the source module it is built from. */
const sourceOf = (target: string) =>
  new URL(`../${target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")}`, import.meta.url).href;

describe("public exports", () => {
  it("pins every subpath of package.json", () => {
    expect(Object.keys(pkg.exports).sort()).toEqual(
      [...Object.keys(PUBLIC), ...Object.keys(DEPRECATED_ALIASES)].sort(),
    );
  });

  for (const [alias, { target, module }] of Object.entries(DEPRECATED_ALIASES)) {
    it(`${alias} (deprecated) still gives what ${target} gives`, async () => {
      expect(pkg.exports[alias]?.import).toBe(module);
      const mod = (await import(sourceOf(module))) as Record<string, unknown>;
      const names = PUBLIC[target] ?? [];
      for (const name of Object.keys(mod)) expect(names).toContain(name);
    }, 60_000);
  }

  it("./durable's step effects (deprecated there) are each engine's own", async () => {
    const durable = (await import(sourceOf("./dist/durable/index.js"))) as Record<string, unknown>;
    const moved: [string, string[]][] = [
      ["dynamodb", ["DynamoDBStepEffects"]],
      ["postgres", ["PostgresStepEffects", "createPostgresStepEffectsTable"]],
      ["sqlite", ["SqliteStepEffects"]],
      ["valkey", ["ValkeyStepEffects"]],
    ];
    for (const [folder, names] of moved) {
      const own = (await import(sourceOf(`./dist/engines/${folder}/index.js`))) as Record<string, unknown>;
      for (const name of names) {
        expect(own[name], name).toBeTypeOf("function");
        expect(durable[name], name).toBe(own[name]);
      }
    }
  }, 60_000);

  for (const [subpath, names] of Object.entries(PUBLIC)) {
    it(`${subpath} exports exactly its public names`, async () => {
      const target = pkg.exports[subpath];
      if (!target) throw new Error(`package.json has no export ${subpath}`);
      expect(target.types).toBe(target.import.replace(/\.js$/, ".d.ts"));
      const mod = (await import(sourceOf(target.import))) as Record<string, unknown>;
      const actual = Object.keys(mod).sort();
      expect(actual).toEqual([...names].sort());
      for (const internal of INTERNAL) expect(actual).not.toContain(internal);
    }, 60_000);
  }
});
