import type { EventBridgeEvent, S3Event, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { OptionsError } from "../core/errors.js";
import { custom, func, optionsRule, required, resolveOptions, schemaFor, string } from "../core/options.js";
import {
  eventBridgeHandler,
  type LambdaHandler,
  type S3TestEventPayload,
  s3Handler,
  sqsHandler,
} from "../lambda/handlers.js";
import type { InvocationReport } from "../lambda/invocation.js";
import type { EffectivelyOnceOptions, EventHandler, HandledEvent } from "../lambda/options.js";
import { durableExecutionName } from "./execution-name.js";
import { type LambdaInvoker, startDurableExecution } from "./lambda-invoke.js";
import { canonicalJson, dispatchedPayload, payloadDigest, stableEvent } from "./payload.js";
import { StepEffects } from "./step-effects.js";

/**
 * The options of the dispatchers: the Lambda wrappers' options of mode `run` (store, pipeline, busy, messages,
 * subject/identity/position derivations, …), less `mode` and `payloadFingerprint` (the dispatcher fingerprints the
 * payload itself), plus the durable function to start.
 */
export interface DurableDispatcherOptions<D = unknown>
  extends Omit<EffectivelyOnceOptions, "mode" | "payloadFingerprint"> {
  /** The durable function: a name or ARN, with its version or alias (Lambda starts durable functions qualified only). */
  functionName: string;
  /** The version or alias, when `functionName` carries none. */
  qualifier?: string;
  /** The client to invoke with: `new LambdaClient({})` of `@aws-sdk/client-lambda`. */
  lambda: LambdaInvoker;
  /**
   * Your fields of the payload (`detail`), from the event's stable fields only: two deliveries of one event must give
   * the same value, or Lambda takes the second for another payload. A throw makes the delivery malformed.
   */
  detail?: (event: HandledEvent) => D;
  /**
   * The step effects of the durable function: the dispatcher's commit then moves the subject's execution fence to
   * the new execution (in the commit's one request), so an older execution's steps are refused from then on. Needs a
   * store of the effects' engine that folds its writes (`DynamoDBStore` for `DynamoDBStepEffects`, …).
   */
  stepEffects?: StepEffects;
}

/** What a dispatched event's commit records, replayed to its duplicates. */
export interface DispatchResult {
  executionName: string;
  /** The execution's ARN, as Lambda returned it (null when it returned none). */
  executionArn: string | null;
}

type OwnOptions = Pick<
  DurableDispatcherOptions,
  "functionName" | "qualifier" | "lambda" | "detail" | "stepEffects"
>;

const DISPATCHER_OPTIONS = schemaFor<OwnOptions>()({
  functionName: required(string()),
  qualifier: string(),
  lambda: required(
    custom<LambdaInvoker>("a LambdaClient", (v) => typeof (v as LambdaInvoker | null)?.send === "function"),
  ),
  detail: func<NonNullable<OwnOptions["detail"]>>({ expected: "a function of the event" }),
  stepEffects: custom<StepEffects>("step effects (DynamoDBStepEffects, …)", (v) => v instanceof StepEffects),
});
type ResolvedOwn = ReturnType<typeof resolveOwn>;
const resolveOwn = (what: string, own: unknown) => resolveOptions(what, DISPATCHER_OPTIONS, own);
const OWN_KEYS = Object.keys(DISPATCHER_OPTIONS) as (keyof OwnOptions)[];

/** A dispatcher for S3 notifications invoked directly: one durable execution per event, in sequencer order per key. */
export function durableS3Dispatcher<D = unknown>(
  options: DurableDispatcherOptions<D>,
): LambdaHandler<S3Event | S3TestEventPayload, InvocationReport<DispatchResult>> {
  const { handler, wrapper } = dispatcherParts("durableS3Dispatcher", options);
  return s3Handler(handler, wrapper);
}

/** A dispatcher for SQS batches (S3 notifications, SNS-in-SQS, EventBridge-in-SQS or your messages). */
export function durableSqsDispatcher<D = unknown>(
  options: DurableDispatcherOptions<D>,
): LambdaHandler<SQSEvent, SQSBatchResponse> {
  const { handler, wrapper } = dispatcherParts("durableSqsDispatcher", options);
  return sqsHandler(handler, wrapper);
}

/** A dispatcher for EventBridge events (S3 object events, or yours with `messages: "accept"`). */
export function durableEventBridgeDispatcher<D = unknown>(
  options: DurableDispatcherOptions<D>,
): LambdaHandler<EventBridgeEvent<string, unknown>, InvocationReport<DispatchResult>> {
  const { handler, wrapper } = dispatcherParts("durableEventBridgeDispatcher", options);
  return eventBridgeHandler(handler, wrapper);
}

/**
 * Splits the options (the dispatcher's own, validated here; the rest validated by the wrapper) and builds the
 * handler the wrapper runs under the guard: claim → Invoke → commit, the commit recording the execution.
 */
function dispatcherParts<D>(
  what: string,
  options: DurableDispatcherOptions<D>,
): { handler: EventHandler<DispatchResult>; wrapper: EffectivelyOnceOptions } {
  if (typeof options !== "object" || options === null) {
    throw new OptionsError(`${what}: options are required (an object)`);
  }
  const given = options as DurableDispatcherOptions<D> & Record<string, unknown>;
  const wrapper: Record<string, unknown> = {};
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    (OWN_KEYS.includes(key as keyof OwnOptions) ? own : wrapper)[key] = value;
  }
  const o = resolveOwn(what, own);
  optionsRule(
    what,
    !("mode" in wrapper),
    'mode: the dispatcher runs in mode "run" (the Invoke is no atomic write)',
  );
  optionsRule(
    what,
    !("payloadFingerprint" in wrapper),
    "payloadFingerprint: the dispatcher fingerprints its payload",
  );
  const detail = o.detail as ((event: HandledEvent) => D) | undefined;
  const fences = o.stepEffects;
  if (fences) {
    const probe = fences.fenceWrite({
      executionName: durableExecutionName("probe", "probe"),
      subject: "probe",
      identity: "probe",
      position: null,
    });
    optionsRule(
      what,
      given.store === undefined || given.store.canFold?.(probe) === true,
      `stepEffects: the store cannot fold a ${probe.engine} write (the fence move goes in its commit)`,
    );
  }
  const handler = startHandler(o, detail);
  // Same identity, other content: the guard's `conflict` while its state is kept, Lambda's exception after.
  const fingerprint = (event: HandledEvent) =>
    payloadDigest(canonicalJson({ event: stableEvent(event), detail: detail?.(event) ?? null }));
  return {
    handler,
    wrapper: { ...(wrapper as unknown as EffectivelyOnceOptions), payloadFingerprint: fingerprint },
  };
}

/** The handler the guard runs per event: one Invoke; the fence move (when asked) folded into the commit. */
function startHandler<D>(
  o: ResolvedOwn,
  detail: ((event: HandledEvent) => D) | undefined,
): EventHandler<DispatchResult> {
  const fences = o.stepEffects;
  return async (event, ctx) => {
    const payload = dispatchedPayload(event, ctx, detail?.(event));
    const name = payload.execution.executionName;
    // Before the Invoke: an execution whose steps can never commit (their table is missing) is not started.
    if (fences) await fences.ready();
    const out = await startDurableExecution(
      o.lambda,
      {
        FunctionName: o.functionName,
        InvocationType: "Event",
        DurableExecutionName: name,
        Payload: new TextEncoder().encode(canonicalJson(payload)),
        ...(o.qualifier !== undefined ? { Qualifier: o.qualifier } : {}),
      },
      ctx.signal,
    );
    if (fences) ctx.atCommit(fences.fenceWrite(payload));
    const executionArn = out.DurableExecutionArn ?? null;
    ctx.logger.info(`started durable execution ${name} for ${ctx.subject}`, {
      executionName: name,
      executionArn,
    });
    return { executionName: name, executionArn };
  };
}
