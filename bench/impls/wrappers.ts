import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { Context, EventBridgeEvent, S3Event, S3EventRecord, SQSEvent, SQSRecord } from "aws-lambda";
import type { S3ObjectEvent } from "../../src/core/event.js";
import { createGuard } from "../../src/core/guard.js";
import { InlineDynamoDBStore } from "../../src/engines/dynamodb/inline-store.js";
import {
  type ApplyEventHandler,
  type EventHandler,
  eventBridgeHandler,
  type HandledEvent,
  s3Handler,
  sqsHandler,
  type WrapperMode,
} from "../../src/lambda/index.js";
import { lambdaContext } from "../../test/kit/context.js";
import { eventBridgeS3, sqsRecord } from "../../test/kit/events.js";
import type { BenchEvent } from "../events.js";
import { createTable, dropTables } from "../tables.js";
import { quietObservability, rowOf } from "./inline.js";
import {
  effectRow,
  type HandlerPlan,
  newStats,
  type OpenContext,
  type RunStats,
  runHandler,
} from "./types.js";

/**
 * The Lambda wrapper path per trigger, beside the bare guard and Powertools on the same handler: each row receives
 * an invocation's events and its payload as Lambda would deliver it (S3 notification, SQS batch of S3 notifications,
 * EventBridge event), and does what a function of that kind does with it. Our rows use inline state
 * (`InlineDynamoDBStore`): the handler's effect is its row, written with the commit.
 */
export type Trigger = "s3" | "sqs" | "eventbridge";

export const TRIGGERS: Record<Trigger, { batch: number; label: string }> = {
  s3: { batch: 1, label: "S3 notification (s3Handler)" },
  sqs: { batch: 10, label: "SQS batch of 10 S3 notifications (sqsHandler)" },
  eventbridge: { batch: 1, label: "EventBridge S3 event (eventBridgeHandler)" },
};

/** One invocation's events, in the payload the trigger sends. */
export interface Invocation {
  events: BenchEvent[];
  payload: S3Event | SQSEvent | EventBridgeEvent<string, Record<string, unknown>>;
}

export interface BatchInstance {
  readonly outputTable: string;
  readonly stats: RunStats;
  /** One invocation; throws if any of its events was not processed (none should fail here). */
  invoke(invocation: Invocation): Promise<void>;
  close(): Promise<void>;
}

export interface BatchImplementation {
  /** Row name within its trigger. */
  readonly name: string;
  readonly description: string;
  open(ctx: OpenContext): Promise<BatchInstance>;
}

const PLAN: HandlerPlan = { workMs: 0 };

export function invocationOf(trigger: Trigger, events: BenchEvent[]): Invocation {
  if (trigger === "s3") return { events, payload: { Records: events.map((e) => e.record) } };
  if (trigger === "sqs") {
    const records = events.map((e) =>
      sqsRecord({ Records: [e.record] }, { messageId: `${e.key}#${e.version}` }),
    );
    return { events, payload: { Records: records } };
  }
  const [e] = events;
  if (!e || events.length !== 1) throw new Error("an EventBridge invocation carries one event");
  return {
    events,
    payload: eventBridgeS3({
      key: e.key,
      bucket: e.bucket,
      sequencer: e.sequencer,
      id: `${e.key}#${e.version}`,
      requestId: `REQ${e.version}`,
      etag: `etag-${e.version}`,
    }),
  };
}

/** The rows of one trigger, in the order the report lists them. */
export function wrapperRows(trigger: Trigger): BatchImplementation[] {
  return [
    unguardedRow(),
    bareGuardRow("apply"),
    bareGuardRow("run"),
    oursWrapperRow(trigger, "apply"),
    oursWrapperRow(trigger, "run"),
    powertoolsRow(trigger),
  ];
}

/** The handler's effect alone (one plain PutItem per event, the batch's at once): the floor for "added ms". */
function unguardedRow(): BatchImplementation {
  return {
    name: "unguarded",
    description: "the handler's effect alone: one PutItem per event, a batch's events at once",
    async open({ client, prefix }) {
      const out = `${prefix}-out`;
      await createTable(client, out);
      const stats = newStats();
      return {
        outputTable: out,
        stats,
        async invoke({ events }) {
          await Promise.all(events.map((e) => runHandler(stats, e, PLAN, () => putEffect(client, out, e))));
        },
        close: () => dropTables(client, [out]),
      };
    },
  };
}

/** guard.apply / guard.run called directly per event (a batch's at once, as the wrapper's concurrency 10 does). */
function bareGuardRow(mode: WrapperMode): BatchImplementation {
  return {
    name: `guard.${mode}`,
    description: `guard.${mode} on InlineDynamoDBStore, no wrapper: the bare guard`,
    async open({ client, prefix }) {
      const out = `${prefix}-out`;
      await createTable(client, out);
      const stats = newStats();
      const store = new InlineDynamoDBStore({ client, tableName: out });
      const guard = createGuard({ store });
      const one = async (e: BenchEvent) => {
        const ev = { subject: e.subject, identity: e.identity, position: e.position };
        const outcome =
          mode === "apply"
            ? await guard.apply(ev, (ctx) =>
                runHandler(stats, e, PLAN, () => ctx.atCommit(store.row(ctx, rowOf(e)))),
              )
            : await guard.run(ev, (ctx) =>
                runHandler(stats, e, PLAN, () => ctx.atCommit(store.row(ctx, rowOf(e)))),
              );
        if (outcome.status !== "processed") throw new Error(`guard.${mode}: ${outcome.status}`);
      };
      return {
        outputTable: out,
        stats,
        invoke: async ({ events }) => {
          await Promise.all(events.map(one));
        },
        close: () => dropTables(client, [out]),
      };
    },
  };
}

/** The trigger's wrapper in mode `apply` or `run` on the same store and handler. */
function oursWrapperRow(trigger: Trigger, mode: WrapperMode): BatchImplementation {
  return {
    name: `wrapper ${mode}`,
    description: `${TRIGGERS[trigger].label.split("(")[1]?.replace(")", "")}(handler, { store, mode: "${mode}" }) on InlineDynamoDBStore`,
    async open({ client, prefix }) {
      const out = `${prefix}-out`;
      await createTable(client, out);
      const stats = newStats();
      const store = new InlineDynamoDBStore({ client, tableName: out });
      // The parsed event names its subject: the bench event it came from is looked up by it.
      const jobs = new Map<string, BenchEvent>();
      const compute: ApplyEventHandler = (e, ctx) => {
        const job = jobs.get(subjectOf(e));
        if (!job) throw new Error(`no bench event for ${subjectOf(e)}`);
        return runHandler(stats, job, PLAN, () => ctx.atCommit(store.row(ctx, rowOf(job))));
      };
      const wrapped = wrap(trigger, mode, compute, store);
      return {
        outputTable: out,
        stats,
        async invoke({ events, payload }) {
          for (const e of events) jobs.set(e.subject, e);
          const answer = await wrapped(payload, lambdaContext());
          const failures = (answer as { batchItemFailures?: unknown[] }).batchItemFailures ?? [];
          for (const e of events) jobs.delete(e.subject);
          if (failures.length > 0) throw new Error(`${failures.length} records failed`);
        },
        close: () => dropTables(client, [out]),
      };
    },
  };
}

type AnyHandler = (payload: Invocation["payload"], context: Context) => Promise<unknown>;

function wrap(
  trigger: Trigger,
  mode: WrapperMode,
  compute: ApplyEventHandler,
  store: InlineDynamoDBStore,
): AnyHandler {
  const quiet = quietObservability();
  const run: EventHandler = async (e, ctx) => compute(e, ctx);
  const make = { s3: s3Handler, sqs: sqsHandler, eventbridge: eventBridgeHandler }[trigger] as (
    handler: unknown,
    options: unknown,
  ) => AnyHandler;
  return mode === "apply"
    ? make(compute, { store, mode: "apply", ...quiet })
    : make(run, { store, ...quiet });
}

function subjectOf(e: HandledEvent): string {
  return (e as S3ObjectEvent).subject;
}

/**
 * Powertools' `makeIdempotent` with a `DynamoDBPersistenceLayer` on the same handler, as its docs set it up per
 * trigger: around the per-record function for S3 and SQS (the batch's records at once, as its batch utility does by
 * default), around the whole handler for EventBridge (keyed by the event's `id`).
 */
function powertoolsRow(trigger: Trigger): BatchImplementation {
  return {
    name: "powertools",
    description: `@aws-lambda-powertools/idempotency: makeIdempotent + DynamoDBPersistenceLayer (${trigger})`,
    async open({ client, prefix }) {
      const idem = `${prefix}-idem`;
      const out = `${prefix}-out`;
      await createTable(client, idem, "id");
      await createTable(client, out);
      const stats = newStats();
      const persistenceStore = new DynamoDBPersistenceLayer({ tableName: idem, awsSdkV3Client: client });
      const jobs = new Map<string, BenchEvent>();
      const effect = async (bucket: string, key: string) => {
        const job = jobs.get(`${bucket}/${key}`);
        if (!job) throw new Error(`no bench event for ${bucket}/${key}`);
        return runHandler(stats, job, PLAN, () => putEffect(client, out, job));
      };
      const handler = powertoolsHandler(trigger, persistenceStore, effect);
      return {
        outputTable: out,
        stats,
        async invoke({ events, payload }) {
          for (const e of events) jobs.set(e.subject, e);
          await handler(payload, lambdaContext({ functionName: "bench-powertools", memoryMb: 1024 }));
          for (const e of events) jobs.delete(e.subject);
        },
        close: () => dropTables(client, [idem, out]),
      };
    },
  };
}

type Effect = (bucket: string, key: string) => Promise<unknown>;

function powertoolsHandler(
  trigger: Trigger,
  persistenceStore: DynamoDBPersistenceLayer,
  effect: Effect,
): AnyHandler {
  const s3Record = (r: S3EventRecord) => effect(r.s3.bucket.name, r.s3.object.key);
  if (trigger === "eventbridge") {
    const config = new IdempotencyConfig({ eventKeyJmesPath: "id", throwOnNoIdempotencyKey: true });
    // A Lambda handler's shape (event, context): makeIdempotent registers the context itself.
    return makeIdempotent(
      async (
        event: EventBridgeEvent<string, { bucket: { name: string }; object: { key: string } }>,
        _context: Context,
      ) => effect(event.detail.bucket.name, event.detail.object.key),
      { persistenceStore, config },
    ) as unknown as AnyHandler;
  }
  const jmes =
    trigger === "s3" ? "[s3.bucket.name, s3.object.key, s3.object.sequencer, eventName]" : "messageId";
  const config = new IdempotencyConfig({ eventKeyJmesPath: jmes, throwOnNoIdempotencyKey: true });
  const perRecord = makeIdempotent(
    async (record: S3EventRecord | SQSRecord) =>
      trigger === "s3"
        ? s3Record(record as S3EventRecord)
        : s3Record((JSON.parse((record as SQSRecord).body) as S3Event).Records[0] as S3EventRecord),
    { persistenceStore, config },
  );
  return async (payload, context) => {
    config.registerLambdaContext(context);
    const records = (payload as { Records: (S3EventRecord | SQSRecord)[] }).Records;
    const settled = await Promise.allSettled(records.map((r) => perRecord(r)));
    const failed = settled.filter((s) => s.status === "rejected");
    if (failed.length > 0) throw (failed[0] as PromiseRejectedResult).reason;
  };
}

function putEffect(client: DynamoDBClient, table: string, e: BenchEvent) {
  return client.send(new PutItemCommand({ TableName: table, Item: effectRow(e) }));
}
