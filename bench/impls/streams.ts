import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { type AttributeValue, type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import type {
  Context,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  KinesisStreamEvent,
  KinesisStreamRecord,
  SQSEvent,
  SQSRecord,
} from "aws-lambda";
import type { DynamoDBChangeEvent, KinesisRecordEvent, MessageEvent } from "../../src/core/event.js";
import { createStateTable } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import {
  dynamodbStreamHandler,
  kinesisHandler,
  sqsHandler,
  type WrapperMode,
} from "../../src/lambda/index.js";
import { lambdaContext } from "../../test/kit/context.js";
import { sqsRecord } from "../../test/kit/events.js";
import { dynamodbRecord, kinesisRecord } from "../../test/kit/stream-events.js";
import { createTable, dropTables } from "../tables.js";
import { quietObservability } from "./inline.js";
import type { OpenContext } from "./types.js";

/**
 * The stream path: one shard's batches, as Lambda delivers them, through our stream wrappers and through Powertools'
 * batch utility with its idempotency, on the same user handler body (one PutItem per record, of the same row).
 * SQS rows carry the same payloads as application messages, for the requests and capacity per record beside them.
 */
export type StreamSource = "kinesis" | "dynamodb" | "sqs";

/** What the producer put on the stream (Kinesis: the record's data, as JSON; DynamoDB: the item's new image). */
export interface Payload {
  /** The partition key (Kinesis) or the item's key (DynamoDB): a few per shard. */
  subject: string;
  producerId: string;
  /** The producer's request, unique per record: the effect row's key. */
  requestId: string;
  /** Per subject 1, 2, …: the SQS rows' position (Kinesis and DynamoDB order by their sequence numbers). */
  seq: number;
  amount: number;
}

/** One batch of one source, and the payloads it carries in order. */
export interface StreamBatch {
  payloads: Payload[];
  event: KinesisStreamEvent | DynamoDBStreamEvent | SQSEvent;
}

/**
 * Batch `index` of one shard (`shard` names it): `size` new producer requests over the same `subjects` partition keys
 * (items) in every batch, round robin, each subject's `seq` going on from the batch before.
 */
export function payloadsOf(shard: string, index: number, size: number, subjects: number): Payload[] {
  const perSubject = Math.ceil(size / subjects);
  return Array.from({ length: size }, (_, i) => ({
    subject: `${shard}-s${i % subjects}`,
    producerId: `producer-${i % 3}`,
    requestId: `${shard}-b${index}-r${i}`,
    seq: index * perSubject + Math.floor(i / subjects) + 1,
    amount: 100 + i,
  }));
}

/** The payloads in the source's Lambda event shape (new sequence numbers, above every earlier batch's). */
export function batchOf(source: StreamSource, payloads: Payload[]): StreamBatch {
  if (source === "kinesis") {
    const Records = payloads.map((p) =>
      kinesisRecord({ partitionKey: p.subject, data: p, shardId: "shardId-000000000000" }),
    );
    return { payloads, event: { Records } };
  }
  if (source === "dynamodb") {
    const Records = payloads.map((p) =>
      dynamodbRecord({
        eventName: p.seq === 1 ? "INSERT" : "MODIFY",
        keys: { pk: { S: p.subject } },
        newImage: marshall({ pk: p.subject, ...p }) as Record<string, unknown>,
      }),
    );
    return { payloads, event: { Records } };
  }
  const Records = payloads.map((p) => sqsRecord(p, { messageId: `m-${p.requestId}` }));
  return { payloads, event: { Records } };
}

/** The effect: one row per record, keyed by the producer's request (so a second write of it shows). */
function effectItem(p: Payload, sequenceNumber: string): Record<string, string | number> {
  return {
    pk: effectKey(p),
    eid: sequenceNumber,
    subject: p.subject,
    amount: p.amount,
    runId: Math.random().toString(36).slice(2),
  };
}

export const effectKey = (p: Payload): string => `${p.producerId}#${p.requestId}`;

/**
 * The payloads whose effect a row writes: every one, or with `newestPerSubject` each subject's last one in the batch
 * (the older ones end stale without running).
 */
export function effectsOf(payloads: readonly Payload[], newestPerSubject: boolean | undefined): Payload[] {
  if (!newestPerSubject) return [...payloads];
  return [...new Map(payloads.map((p) => [p.subject, p])).values()];
}

/** The user's handler body, the same for every row: one PutItem of the record's row. */
function putEffect(client: DynamoDBClient, table: string, p: Payload, sequenceNumber: string) {
  return client.send(new PutItemCommand({ TableName: table, Item: marshall(effectItem(p, sequenceNumber)) }));
}

export interface StreamInstance {
  readonly outputTable: string;
  /** Handler runs (a duplicate that runs the handler again shows here). */
  readonly handlerRuns: number;
  /** One invocation; throws if Lambda would be told that any record failed. */
  invoke(batch: StreamBatch): Promise<void>;
  close(): Promise<void>;
}

export interface StreamImplementation {
  readonly name: string;
  readonly source: StreamSource;
  readonly description: string;
  /** The opt-in `newestPerSubject`: only each subject's newest record of a batch runs (and writes its row). */
  readonly newestPerSubject?: boolean;
  open(ctx: OpenContext): Promise<StreamInstance>;
}

/** The rows measured per stream source, in the order the report lists them. */
export function streamRows(source: "kinesis" | "dynamodb"): StreamImplementation[] {
  return [
    oursRow(source, "run"),
    oursRow(source, "apply"),
    oursRow(source, "run", true),
    oursRow(source, "apply", true),
    powertoolsRow(source, true),
    powertoolsRow(source, false),
  ];
}

const WRAPPER_NAME = { kinesis: "kinesisHandler", dynamodb: "dynamodbStreamHandler", sqs: "sqsHandler" };

/**
 * Our wrapper on a DynamoDB state table (`DynamoDBStore`). Mode `run`: the handler body is the plain PutItem (claim,
 * put, commit). Mode `apply`: the same row folded into the commit (`ctx.atCommit(sink.atomicPut(…))`), one request.
 * SQS: application messages with the stream's keys (subject, a position per subject).
 */
export function oursRow(
  source: StreamSource,
  mode: WrapperMode,
  newestPerSubject = false,
): StreamImplementation {
  const opts = `${mode === "apply" ? ', mode: "apply"' : ""}${newestPerSubject ? ", newestPerSubject: true" : ""}`;
  return {
    name: `${WRAPPER_NAME[source]} ${mode}${newestPerSubject ? " newestPerSubject" : ""}`,
    source,
    newestPerSubject,
    description: `${WRAPPER_NAME[source]}(handler, { store: DynamoDBStore${opts} })${mode === "apply" ? ": ctx.atCommit(sink.atomicPut(row))" : ": PutItem(row)"}`,
    async open({ client, prefix }) {
      const stateTable = `${prefix}-state`;
      const out = `${prefix}-out`;
      await createStateTable(client, { tableName: stateTable });
      await createTable(client, out);
      const store = new DynamoDBStore({ client, tableName: stateTable });
      const sink = new DynamoDBFencedSink({ client, tableName: out });
      let runs = 0;
      const effect: Effect = (p, sequenceNumber, ctx) => {
        runs++;
        if (mode === "run") return putEffect(client, out, p, sequenceNumber);
        const c = ctx as Parameters<DynamoDBFencedSink["putAtCommit"]>[0];
        sink.putAtCommit(c, effectItem(p, sequenceNumber));
        return undefined;
      };
      const handler = wrapperOf(source, mode, store, effect, newestPerSubject);
      return {
        outputTable: out,
        get handlerRuns() {
          return runs;
        },
        async invoke(batch) {
          const answer = (await handler(batch.event, lambdaContext())) as {
            batchItemFailures: unknown[];
          };
          if (answer.batchItemFailures.length > 0)
            throw new Error(`${answer.batchItemFailures.length} records failed`);
        },
        close: () => dropTables(client, [stateTable, out]),
      };
    },
  };
}

type Effect = (p: Payload, sequenceNumber: string, ctx: object) => Promise<unknown> | undefined;
type AnyHandler = (event: StreamBatch["event"], context: Context) => Promise<unknown>;

function wrapperOf(
  source: StreamSource,
  mode: WrapperMode,
  store: DynamoDBStore,
  effect: Effect,
  newestPerSubject: boolean,
): AnyHandler {
  const options = {
    store,
    ...quietObservability(),
    ...(mode === "apply" ? { mode } : {}),
    ...(newestPerSubject ? { newestPerSubject } : {}),
  };
  // Typed per mode by the wrappers' overloads; the bench picks the mode at run time.
  type Make = (handler: unknown, options: unknown) => AnyHandler;
  if (source === "kinesis") {
    const handler = (r: KinesisRecordEvent, ctx: object) => effect(r.json as Payload, r.sequenceNumber, ctx);
    return (kinesisHandler as Make)(handler, options);
  }
  if (source === "dynamodb") {
    const handler = (c: DynamoDBChangeEvent, ctx: object) =>
      effect(c.newImage as unknown as Payload, c.sequenceNumber, ctx);
    return (dynamodbStreamHandler as Make)(handler, options);
  }
  const payload = (m: MessageEvent) => JSON.parse(m.body) as Payload;
  const handler = (m: MessageEvent, ctx: object) => effect(payload(m), m.messageId, ctx);
  return (sqsHandler as Make)(handler, {
    ...options,
    messages: "accept",
    subject: (m: MessageEvent) => payload(m).subject,
    position: (m: MessageEvent) => payload(m).seq,
  });
}

/**
 * Powertools as its docs combine the two utilities: `processPartialResponse` with a `BatchProcessor` of the stream's
 * `EventType`, the record handler made idempotent with `makeIdempotent` (a `DynamoDBPersistenceLayer`, keyed by the
 * record's `eventID` (SQS: `messageId`), the context registered per invocation). `parallel`: the utility's default,
 * every record of the batch at once (a partition key's order is not kept); else `processInParallel: false`, one
 * record after another in shard order.
 */
export function powertoolsRow(source: StreamSource, parallel: boolean): StreamImplementation {
  return {
    name: parallel ? "powertools" : "powertools sequential",
    source,
    description: `@aws-lambda-powertools/batch 2.35.0 BatchProcessor(EventType.${EVENT_TYPE[source]})${parallel ? "" : " processInParallel: false"} + makeIdempotent (DynamoDBPersistenceLayer)`,
    async open({ client, prefix }) {
      const idem = `${prefix}-idem`;
      const out = `${prefix}-out`;
      await createTable(client, idem, "id");
      await createTable(client, out);
      const persistenceStore = new DynamoDBPersistenceLayer({ tableName: idem, awsSdkV3Client: client });
      const config = new IdempotencyConfig({
        eventKeyJmesPath: source === "sqs" ? "messageId" : "eventID",
        throwOnNoIdempotencyKey: true,
      });
      let runs = 0;
      const recordHandler = makeIdempotent(
        async (record: KinesisStreamRecord | DynamoDBRecord | SQSRecord) => {
          runs++;
          const [p, sequenceNumber] = decode(source, record);
          await putEffect(client, out, p, sequenceNumber);
        },
        { persistenceStore, config },
      );
      const processor = new BatchProcessor(EVENT_TYPE[source]);
      return {
        outputTable: out,
        get handlerRuns() {
          return runs;
        },
        async invoke(batch) {
          const context = lambdaContext({ functionName: "bench-powertools", memoryMb: 1024 });
          config.registerLambdaContext(context);
          const answer = await processPartialResponse(batch.event, recordHandler, processor, {
            context,
            processInParallel: parallel,
          });
          if (answer.batchItemFailures.length > 0)
            throw new Error(`${answer.batchItemFailures.length} records failed`);
        },
        close: () => dropTables(client, [idem, out]),
      };
    },
  };
}

const EVENT_TYPE = {
  kinesis: EventType.KinesisDataStreams,
  dynamodb: EventType.DynamoDBStreams,
  sqs: EventType.SQS,
} as const;

/** What a Powertools record handler reads from its raw record: the payload, and the id the row carries. */
function decode(
  source: StreamSource,
  record: KinesisStreamRecord | DynamoDBRecord | SQSRecord,
): [Payload, string] {
  if (source === "kinesis") {
    const r = record as KinesisStreamRecord;
    return [
      JSON.parse(Buffer.from(r.kinesis.data, "base64").toString("utf8")) as Payload,
      r.kinesis.sequenceNumber,
    ];
  }
  if (source === "dynamodb") {
    const r = record as DynamoDBRecord;
    const image = unmarshall(r.dynamodb?.NewImage as Record<string, AttributeValue>) as Payload;
    return [image, r.dynamodb?.SequenceNumber ?? ""];
  }
  const r = record as SQSRecord;
  return [JSON.parse(r.body) as Payload, r.messageId];
}
