import type { MiddlewareObj } from "@middy/core";
import type { Context, SQSBatchResponse } from "aws-lambda";
import { OptionsError } from "../core/errors.js";
import { answer } from "./handlers.js";
import { type InvocationReport, InvocationRunner } from "./invocation.js";
import { type EffectivelyOnceOptions, type EventHandler, resolveOptions } from "./options.js";

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
 * without the other. The triggers are told apart at run time, as `wrapHandler` does.
 */
type Dispatch = {
  run<R>(handler: EventHandler<R>): Promise<SQSBatchResponse | InvocationReport<R>>;
  used: boolean;
};

const dispatches = new WeakMap<object, Dispatch>();

export function effectivelyOnce(
  options: EffectivelyOnceOptions,
): MiddlewareObj<unknown, unknown, Error, Context> {
  const runner = new InvocationRunner("effectivelyOnce", resolveOptions("effectivelyOnce (middy)", options));
  return {
    name: "effectivelyOnce",
    before: (request) => {
      const { event, context } = request;
      dispatches.set(context, {
        used: false,
        run: async (handler) => answer(await runner.run(handler, event, context, "any")),
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

/** The Middy base handler: runs `handler` once per event of the invocation prepared by effectivelyOnce(). */
export function eachEvent<R = unknown>(
  handler: EventHandler<R>,
): (event: unknown, context: Context) => Promise<SQSBatchResponse | InvocationReport<R>> {
  if (typeof handler !== "function") throw new OptionsError("eachEvent: handler must be a function");
  return async (_event, context) => {
    const dispatch = context ? dispatches.get(context) : undefined;
    if (!dispatch) {
      throw new OptionsError("eachEvent: add .use(effectivelyOnce(options)) to the middy handler");
    }
    dispatch.used = true;
    return dispatch.run(handler);
  };
}
