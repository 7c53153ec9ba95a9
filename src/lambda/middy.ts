/**
 * The Lambda wrappers as Middy middleware.
 * @module effectively-once/lambda/middy
 */
import type { MiddlewareObj } from "@middy/core";
import type { Context, SQSBatchResponse } from "aws-lambda";
import { OptionsError } from "../core/errors.js";
import { oneOf, resolveOptions as resolveSchema, schemaFor } from "../core/options.js";
import { ANY_TRIGGER } from "./any-trigger.js";
import { answer } from "./handlers.js";
import {
  type AnyEventHandler,
  type InvocationReport,
  InvocationRunner,
  type StreamBatchResponse,
} from "./invocation.js";
import {
  type AnyHandledEvent,
  type HandlerOf,
  type OptionsOf,
  resolveOptions,
  type WrapperMode,
} from "./options.js";

/**
 * The Middy form of the wrappers, with the same options and the same behaviour (it runs the same code):
 *
 *   export const handler = middy()
 *     .use(injectLambdaContext(logger))            // any other middlewares
 *     .use(effectivelyOnce({ store, logger, pipeline: "thumbnails" }))
 *     .handler(eachEvent(async (event, ctx) => { ... }));
 *
 * A Middy middleware cannot call the base handler itself (it only sees the request), and the wrappers
 * must call the user's handler once per event. So the middleware prepares the invocation and
 * `eachEvent(handler)` is the base handler that runs it. Each throws a clear OptionsError if used
 * without the other. The triggers are told apart at run time, as `wrapHandler` does (stream batches included).
 *
 * Mode `apply` goes in both: `effectivelyOnce({ store, mode: "apply" })` (checked there with the other options) and
 * `eachEvent(compute, { mode: "apply" })` (which types the handler's context); a mismatch throws an OptionsError.
 */
type Dispatch = {
  run<R>(
    handler: AnyEventHandler<R>,
    mode: WrapperMode,
  ): Promise<SQSBatchResponse | StreamBatchResponse | InvocationReport<R>>;
  used: boolean;
};

const dispatches = new WeakMap<object, Dispatch>();

const EACH_EVENT_OPTIONS = schemaFor<{ mode?: WrapperMode }>()({
  mode: oneOf(["run", "apply"], { default: "run" }),
});

/**
 * Middy middleware running each event of the invocation through the guard (with `eachEvent` as the base
 * handler).
 */
export function effectivelyOnce<M extends WrapperMode = "run">(
  options: OptionsOf<M> & { mode?: M },
): MiddlewareObj<unknown, unknown, Error, Context> {
  const runner = new InvocationRunner(
    "effectivelyOnce",
    resolveOptions("effectivelyOnce (middy)", options),
    ANY_TRIGGER,
  );
  return {
    name: "effectivelyOnce",
    before: (request) => {
      const { event, context } = request;
      dispatches.set(context, {
        used: false,
        run: async (handler, mode) => {
          if (mode !== runner.mode) {
            throw new OptionsError(
              `eachEvent: the handler is for mode "${mode}", effectivelyOnce runs mode "${runner.mode}": ` +
                "give the same mode to both",
            );
          }
          return answer(await runner.run(handler, event, context, "any"));
        },
      });
    },
    after: (request) => {
      const dispatch = dispatches.get(request.context);
      dispatches.delete(request.context);
      if (dispatch && !dispatch.used) {
        throw new OptionsError(
          "effectivelyOnce (middy): the base handler must be eachEvent(handler); it ran on the raw invocation",
        );
      }
    },
    onError: (request) => {
      dispatches.delete(request.context);
    },
  };
}

/**
 * The Middy base handler: runs `handler` once per event of the invocation prepared by effectivelyOnce(). Mode
 * `apply`: `eachEvent(compute, { mode: "apply" })`, with the same mode given to effectivelyOnce. The handler gets
 * every kind of event (stream records included) unless its parameter's type says which.
 */
export function eachEvent<
  R = unknown,
  M extends WrapperMode = "run",
  E extends AnyHandledEvent = AnyHandledEvent,
>(
  handler: HandlerOf<M, R, E>,
  options?: { mode?: M },
): (
  event: unknown,
  context: Context,
) => Promise<SQSBatchResponse | StreamBatchResponse | InvocationReport<R>> {
  if (typeof handler !== "function") throw new OptionsError("eachEvent: handler must be a function");
  const { mode } = resolveSchema("eachEvent", EACH_EVENT_OPTIONS, options ?? {});
  return async (_event, context) => {
    const dispatch = context ? dispatches.get(context) : undefined;
    if (!dispatch) {
      throw new OptionsError("eachEvent: add .use(effectivelyOnce(options)) to the middy handler");
    }
    dispatch.used = true;
    return dispatch.run(handler, mode);
  };
}
