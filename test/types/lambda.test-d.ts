import middy, { type MiddlewareObj } from "@middy/core";
import type {
  Context,
  DynamoDBStreamEvent,
  EventBridgeEvent,
  KinesisStreamEvent,
  S3Event,
  SQSBatchResponse,
  SQSEvent,
} from "aws-lambda";
import { describe, expectTypeOf, it } from "vitest";
import type {
  DynamoDBChangeEvent,
  KinesisRecordEvent,
  MessageEvent,
  S3ObjectEvent,
} from "../../src/core/event.js";
import type { Position } from "../../src/core/position.js";
import type { AtomicWrite } from "../../src/core/store.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import {
  type AnyHandledEvent,
  type ApplyEventHandler,
  type ApplyHandlerContext,
  dynamodbStreamHandler,
  type EffectivelyOnceApplyOptions,
  type EffectivelyOnceOptions,
  type EventHandler,
  eventBridgeHandler,
  type HandledEvent,
  type HandlerContext,
  type InvocationReport,
  kinesisHandler,
  type S3TestEventPayload,
  type StreamBatchResponse,
  s3Handler,
  sqsHandler,
  wrapHandler,
} from "../../src/lambda/index.js";
import { eachEvent, effectivelyOnce } from "../../src/lambda/middy.js";

/** Compile-time only (vitest typecheck): the public handler and wrapper types. */

const store = new MemoryStore();
type Thumb = { thumbnail: string };
const thumbnail: EventHandler<Thumb> = async () => ({ thumbnail: "a.png" });

describe("wrappers: what Lambda passes in and gets back", () => {
  it("sqsHandler takes an SQS batch and answers with batchItemFailures", () => {
    const handler = sqsHandler(thumbnail, { store });
    expectTypeOf(handler).parameters.toEqualTypeOf<[SQSEvent, Context]>();
    expectTypeOf(handler).returns.resolves.toEqualTypeOf<SQSBatchResponse>();
  });

  it("s3Handler and eventBridgeHandler answer with a report typed by the handler's result", () => {
    const s3 = s3Handler(thumbnail, { store });
    expectTypeOf(s3).parameter(0).toEqualTypeOf<S3Event | S3TestEventPayload>();
    expectTypeOf(s3).returns.resolves.toEqualTypeOf<InvocationReport<Thumb>>();
    const eb = eventBridgeHandler(thumbnail, { store });
    expectTypeOf(eb).parameter(0).toEqualTypeOf<EventBridgeEvent<string, unknown>>();
    expectTypeOf(eb).returns.resolves.toEqualTypeOf<InvocationReport<Thumb>>();
  });

  it("the result type is inferred from an inline handler", () => {
    const s3 = s3Handler(async () => 42, { store });
    expectTypeOf(s3).returns.resolves.toEqualTypeOf<InvocationReport<number>>();
    const any = wrapHandler(async () => "done", { store });
    expectTypeOf(any).returns.resolves.toEqualTypeOf<SQSBatchResponse | InvocationReport<string>>();
  });

  it("rejects handlers that do not fit EventHandler", () => {
    // @ts-expect-error a synchronous handler: the wrapper awaits a promise
    sqsHandler(() => 1, { store });
    // @ts-expect-error the handler gets one normalised event, not the raw SQS batch
    sqsHandler(async (event: SQSEvent) => event.Records.length, { store });
    // @ts-expect-error the declared result type is not what the handler returns
    s3Handler<Thumb>(async () => ({ thumbnail: 1 }), { store });
    // @ts-expect-error EventHandler<string> must resolve to a string
    const wrong: EventHandler<string> = async () => 1;
    expectTypeOf(wrong).toBeFunction();
  });

  it("rejects a report used as a batch response", () => {
    const s3 = s3Handler(thumbnail, { store });
    expectTypeOf(s3).returns.resolves.not.toEqualTypeOf<SQSBatchResponse>();
    // @ts-expect-error s3Handler's answer has no batchItemFailures
    const response: Promise<SQSBatchResponse> = s3({ Records: [] }, {} as Context);
    expectTypeOf(response).toBeObject();
  });
});

describe("options", () => {
  it("requires a store and checks literal options' keys and values", () => {
    expectTypeOf<EffectivelyOnceOptions>().toHaveProperty("store");
    // @ts-expect-error store is required
    sqsHandler(thumbnail, {});
    // @ts-expect-error an unknown key in literal options (a typo of leaseMs)
    sqsHandler(thumbnail, { store, leaseMS: 1_000 });
    // @ts-expect-error busy is a policy name
    s3Handler(thumbnail, { store, busy: "sometimes" });
    // @ts-expect-error leaseMs is a number
    eventBridgeHandler(thumbnail, { store, leaseMs: "30s" });
  });
});

describe("the handler's arguments", () => {
  it("HandledEvent narrows by kind; HandlerContext carries the guard's context and the Lambda one", () => {
    const handler: EventHandler = async (event, ctx) => {
      expectTypeOf(event).toEqualTypeOf<HandledEvent>();
      expectTypeOf(ctx).toEqualTypeOf<HandlerContext>();
      if (event.kind === "s3") {
        expectTypeOf(event).toEqualTypeOf<S3ObjectEvent>();
        expectTypeOf(event.key).toBeString();
        expectTypeOf(event.bucket).toBeString();
      } else {
        expectTypeOf(event).toEqualTypeOf<MessageEvent>();
        expectTypeOf(event.body).toBeString();
        // @ts-expect-error a message has no S3 key
        expectTypeOf(event.key).toBeString();
      }
      expectTypeOf(ctx.fence).toBeNumber();
      expectTypeOf(ctx.attempt).toBeNumber();
      expectTypeOf(ctx.position).toEqualTypeOf<Position | undefined>();
      expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
      expectTypeOf(ctx.lambdaContext).toEqualTypeOf<Context | undefined>();
      expectTypeOf(ctx.atCommit).toEqualTypeOf<(write: AtomicWrite) => void>();
      expectTypeOf(ctx.effectKey).toEqualTypeOf<(name: string) => string>();
      // @ts-expect-error the logger is read-only
      ctx.logger = {} as HandlerContext["logger"];
    };
    expectTypeOf(handler).returns.resolves.toBeUnknown();
  });
});

describe("mode apply: the handler's context is the apply context", () => {
  it("types the context from the mode in the options, and infers the result (sync or async)", () => {
    const s3 = s3Handler(
      (event, ctx) => {
        expectTypeOf(event).toEqualTypeOf<HandledEvent>();
        expectTypeOf(ctx).toEqualTypeOf<ApplyHandlerContext>();
        expectTypeOf(ctx.fence).toBeNumber();
        expectTypeOf(ctx.stateKey).toBeString();
        expectTypeOf(ctx.atCommit).toEqualTypeOf<(write: AtomicWrite) => void>();
        expectTypeOf(ctx.effectKey).toEqualTypeOf<(name: string) => string>();
        expectTypeOf(ctx.delivery.correlationId).toBeString();
        expectTypeOf(ctx.lambdaContext).toEqualTypeOf<Context | undefined>();
        // @ts-expect-error nothing is claimed while it computes: no lease, no signal
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        // @ts-expect-error no attempt either (an apply is one request)
        expectTypeOf(ctx.attempt).toBeNumber();
        return 42;
      },
      { store, mode: "apply" },
    );
    expectTypeOf(s3).returns.resolves.toEqualTypeOf<InvocationReport<number>>();
    const sqs = sqsHandler(async () => ({ thumbnail: "a.png" }), { store, mode: "apply" });
    expectTypeOf(sqs).returns.resolves.toEqualTypeOf<SQSBatchResponse>();
    const eb = eventBridgeHandler(() => "x", { store, mode: "apply", busy: "supersede" });
    expectTypeOf(eb).returns.resolves.toEqualTypeOf<InvocationReport<string>>();
    const any = wrapHandler(() => true, { store, mode: "apply" });
    expectTypeOf(any).returns.resolves.toEqualTypeOf<SQSBatchResponse | InvocationReport<boolean>>();
  });

  it('mode run stays the default; explicit "run" is the same', () => {
    s3Handler(
      async (_event, ctx) => {
        expectTypeOf(ctx).toEqualTypeOf<HandlerContext>();
      },
      { store, mode: "run" },
    );
    const compute: ApplyEventHandler<number> = () => 1;
    expectTypeOf(s3Handler(compute, { store, mode: "apply" })).returns.resolves.toEqualTypeOf<
      InvocationReport<number>
    >();
    // An async apply handler fits run too (its context is a subset of run's).
    const asyncCompute: ApplyEventHandler<number> = async () => 1;
    expectTypeOf(asyncCompute).toBeFunction();
  });

  it("rejects a run handler in apply, and options that need a running handler", () => {
    // @ts-expect-error a run handler reads ctx.signal, which apply does not give
    s3Handler(thumbnail, { store, mode: "apply" });
    const heartbeat = { visibilityTimeoutSeconds: 60, intervalSeconds: 20 };
    // @ts-expect-error the visibility heartbeat extends messages while a handler runs under a lease
    sqsHandler(() => 1, { store, mode: "apply", visibilityHeartbeat: heartbeat });
    // @ts-expect-error no lease to renew
    sqsHandler(() => 1, { store, mode: "apply", heartbeatMs: 1_000 });
    // @ts-expect-error an unknown key in literal options
    s3Handler(() => 1, { store, mode: "apply", leaseMS: 1_000 });
    // @ts-expect-error mode is run or apply
    s3Handler(() => 1, { store, mode: "later" });
    expectTypeOf<EffectivelyOnceApplyOptions["mode"]>().toEqualTypeOf<"apply">();
    expectTypeOf<EffectivelyOnceOptions["mode"]>().toEqualTypeOf<"run" | undefined>();
  });

  it("Middy: the same mode in effectivelyOnce and eachEvent", () => {
    const base = eachEvent(
      (_event, ctx) => {
        expectTypeOf(ctx).toEqualTypeOf<ApplyHandlerContext>();
        return 1;
      },
      { mode: "apply" },
    );
    expectTypeOf(base).returns.resolves.toEqualTypeOf<SQSBatchResponse | InvocationReport<number>>();
    middy()
      .use(effectivelyOnce({ store, mode: "apply" }))
      .handler(base);
    // @ts-expect-error no heartbeat in apply
    effectivelyOnce({ store, mode: "apply", heartbeatMs: 10 });
  });
});

describe("Middy", () => {
  it("effectivelyOnce is a middleware on Lambda's Context; eachEvent is the base handler", () => {
    const middleware = effectivelyOnce({ store });
    expectTypeOf(middleware).toEqualTypeOf<MiddlewareObj<unknown, unknown, Error, Context>>();
    const base = eachEvent(thumbnail);
    expectTypeOf(base).parameters.toEqualTypeOf<[unknown, Context]>();
    expectTypeOf(base).returns.resolves.toEqualTypeOf<SQSBatchResponse | InvocationReport<Thumb>>();
    const handler = middy().use(middleware).handler(base);
    expectTypeOf(handler).toBeFunction();
  });

  it("rejects what does not fit", () => {
    // @ts-expect-error an unknown key in literal options
    effectivelyOnce({ store, concurency: 2 });
    // @ts-expect-error store is required
    effectivelyOnce({});
    // @ts-expect-error eachEvent takes an EventHandler
    eachEvent((event: SQSEvent) => event);
  });
});

describe("stream wrappers", () => {
  it("kinesisHandler: the handler and the derivations get a Kinesis record; the answer is the checkpoint", () => {
    const handler = kinesisHandler(
      async (record, ctx) => {
        expectTypeOf(record).toEqualTypeOf<KinesisRecordEvent>();
        expectTypeOf(ctx).toEqualTypeOf<HandlerContext>();
        return record.partitionKey;
      },
      {
        store,
        subject: (r) => r.partitionKey,
        identity: (r) => String(r.json),
        position: (r) => r.sequenceNumber,
      },
    );
    expectTypeOf(handler).parameters.toEqualTypeOf<[KinesisStreamEvent, Context]>();
    expectTypeOf(handler).returns.resolves.toEqualTypeOf<StreamBatchResponse>();
    // @ts-expect-error a Kinesis record has no body
    kinesisHandler(async () => "ok", { store, subject: (r) => r.body });
    // @ts-expect-error messages is for SQS and EventBridge
    kinesisHandler(async () => "ok", { store, messages: "accept" });
  });

  it("dynamodbStreamHandler: a DynamoDB change, in either mode", () => {
    const run = dynamodbStreamHandler(
      async (change) => {
        expectTypeOf(change).toEqualTypeOf<DynamoDBChangeEvent>();
        return change.ttlExpired;
      },
      { store },
    );
    expectTypeOf(run).parameters.toEqualTypeOf<[DynamoDBStreamEvent, Context]>();
    dynamodbStreamHandler(
      (change, ctx) => {
        expectTypeOf(ctx).toEqualTypeOf<ApplyHandlerContext>();
        return change.item;
      },
      { store, mode: "apply" },
    );
    // @ts-expect-error visibilityHeartbeat is for SQS
    dynamodbStreamHandler(async () => "ok", { store, visibilityHeartbeat: false });
  });

  it("wrapHandler gives an unannotated handler every kind of event; an annotated one keeps its type", () => {
    wrapHandler(
      async (event) => {
        expectTypeOf(event).toEqualTypeOf<AnyHandledEvent>();
      },
      { store },
    );
    wrapHandler(async (event: HandledEvent) => event.kind, { store });
    expectTypeOf(wrapHandler(thumbnail, { store })).returns.resolves.toEqualTypeOf<
      SQSBatchResponse | StreamBatchResponse | InvocationReport<Thumb>
    >();
  });
});
