import middy, { type MiddlewareObj } from "@middy/core";
import type { Context, EventBridgeEvent, S3Event, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { describe, expectTypeOf, it } from "vitest";
import type { MessageEvent, S3ObjectEvent } from "../../src/core/event.js";
import type { Position } from "../../src/core/position.js";
import type { AtomicWrite } from "../../src/core/store.js";
import {
  type EffectivelyOnceOptions,
  type EventHandler,
  eventBridgeHandler,
  type HandledEvent,
  type HandlerContext,
  type InvocationReport,
  type S3TestEventPayload,
  s3Handler,
  sqsHandler,
  wrapHandler,
} from "../../src/lambda/index.js";
import { eachEvent, effectivelyOnce } from "../../src/lambda/middy.js";
import { MemoryStore } from "../../src/stores/memory.js";

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
      // @ts-expect-error the logger is read-only
      ctx.logger = {} as HandlerContext["logger"];
    };
    expectTypeOf(handler).returns.resolves.toBeUnknown();
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
