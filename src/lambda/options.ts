import { createHash } from "node:crypto";
import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import { OptionsError } from "../core/errors.js";
import type {
  Delivery,
  DynamoDBChangeEvent,
  KinesisRecordEvent,
  MessageEvent,
  S3ObjectEvent,
} from "../core/event.js";
import {
  type ApplyContext,
  createGuard,
  GUARD_PASS_THROUGH_KEYS,
  GUARD_PASS_THROUGH_OPTIONS,
  type Guard,
  type GuardContext,
  type GuardOptions,
  type GuardPassThroughKey,
} from "../core/guard.js";
import * as opt from "../core/options.js";
import { PARSE_OPTIONS } from "../sources/options.js";
import type { ResolvedParseOptions } from "../sources/types.js";
import {
  type ResolvedVisibilityHeartbeatOptions,
  resolveVisibilityHeartbeatOptions,
  type SqsSender,
  type VisibilityHeartbeatOptions,
} from "./visibility-heartbeat-options.js";

/** What the user's handler receives: an S3 object event, or an application message (`messages: "accept"`). */
export type HandledEvent = S3ObjectEvent | MessageEvent;

/** What a stream wrapper's handler receives: one Kinesis record, or one DynamoDB change. */
export type StreamRecordEvent = KinesisRecordEvent | DynamoDBChangeEvent;

/** Any event a wrapper hands to a handler (`wrapHandler` and Middy take every trigger). */
export type AnyHandledEvent = HandledEvent | StreamRecordEvent;

/** The events whose guard keys the `subject`, `identity` and `position` options derive. */
export type DerivableEvent = MessageEvent | StreamRecordEvent;

/** A derivation of one guard key from an event and its delivery. */
export type Derivation<E, T> = (event: E, delivery: Delivery) => T;

/**
 * How the wrapper runs each event: `run` (claim, the handler under a lease, commit: any kind of effect) or `apply`
 * (the handler computes atomic writes, then claim + writes + commit go in one request).
 */
export type WrapperMode = "run" | "apply";

/** Where the event came from, and a logger that carries its correlation id: what both modes add. */
export interface DeliveryContext {
  delivery: Delivery;
  /** Undefined when the wrapper is called without a Lambda context (tests, scripts). */
  lambdaContext: Context | undefined;
  /** A child of the configured logger with `correlation_id` set (created on first access). */
  readonly logger: Logger;
}

/** Mode `run`: the guard's context (signal, attempt, atCommit, …) plus the delivery. */
export interface HandlerContext extends GuardContext, DeliveryContext {}

/** Mode `apply`: the apply context (no signal, no attempt: nothing is claimed while it runs) plus the delivery. */
export interface ApplyHandlerContext extends ApplyContext, DeliveryContext {}

/** The user's handler (mode `run`). Its (JSON) result is committed with the event and replayed to duplicates. */
export type EventHandler<R = unknown, E extends AnyHandledEvent = HandledEvent> = (
  event: E,
  ctx: HandlerContext,
) => Promise<R>;

/**
 * The user's handler in mode `apply`: computes the event's atomic writes (`ctx.atCommit`) and its result. It must have
 * no other side effect: it also runs for a duplicate or stale delivery (whose writes are never applied), and again
 * when the request is retried with another fence.
 */
export type ApplyEventHandler<R = unknown, E extends AnyHandledEvent = HandledEvent> = (
  event: E,
  ctx: ApplyHandlerContext,
) => R | Promise<R>;

/** The handler type of a mode, for the events `E` of its trigger. */
export type HandlerOf<M extends WrapperMode, R, E extends AnyHandledEvent = HandledEvent> = M extends "apply"
  ? ApplyEventHandler<R, E>
  : EventHandler<R, E>;

/** The options type of a mode. */
export type OptionsOf<M extends WrapperMode> = M extends "apply"
  ? EffectivelyOnceApplyOptions
  : EffectivelyOnceOptions;

/**
 * What a `position` derivation returns: a number, bigint or Date, or a string that compares correctly as a
 * string.
 */
export type PositionValue = number | bigint | Date | string;

const DERIVES = { expected: "a function of (message, delivery)" };

/**
 * The wrappers' options, declared once: the guard's pass-through fields as they are, and the adapter's own. Each
 * field is the option's type (inferred: `EffectivelyOnceOptions`), its validation and default, and, in its doc
 * comment, its API reference.
 */
export const EFFECTIVELY_ONCE_OPTIONS = {
  ...GUARD_PASS_THROUGH_OPTIONS,
  /** `run` (default): claim, run the handler under a lease, commit. `apply`: see EffectivelyOnceApplyOptions. */
  mode: opt.oneOf(["run", "apply"] as const, { default: "run" }),
  /** Metric dimension `pipeline` and a field on every log line. Default: the Lambda function name. */
  pipeline: opt.string(),
  /**
   * S3 events: order them by sequencer within `bucket/key` (default true: an older event is skipped as stale once
   * a newer one is committed — right when the newest state wins, e.g. a thumbnail). false: deduplicate only —
   * every distinct event is processed once and none is skipped (e.g. one record per upload, re-uploads included).
   */
  orderS3Events: opt.boolean({ default: true }),
  /**
   * Detect an identity reused for other content: `true` fingerprints the payload (a message's body; an S3 event's
   * ETag, size and version), or give a function of the event. A delivery whose identity was committed with
   * another fingerprint ends `conflict` (logged, counted, not acknowledged: retried, then dead-lettered) instead
   * of being replayed as a duplicate. Default off.
   */
  payloadFingerprint: opt.custom<boolean | ((event: HandledEvent) => string)>(
    "a boolean or a function of the event",
    (v) => typeof v === "boolean" || typeof v === "function",
  ),
  /**
   * Application messages (`messages: "accept"`): what order and exclusivity are scoped to, e.g. the order
   * id. Default: the EventBridge id, SNS message id or SQS message id. S3 events always use `bucket/key`.
   * A throw marks the message malformed.
   */
  subject: opt.func<(event: MessageEvent, delivery: Delivery) => string>(DERIVES),
  /**
   * Application messages: what makes two deliveries the same event (an idempotency key). Default: the
   * position when there is one (so a resend of the same version is a duplicate), else the default subject.
   */
  identity: opt.func<(event: MessageEvent, delivery: Delivery) => string>(DERIVES),
  /** Application messages: order within the subject (a version, a timestamp). Undefined: dedupe only. */
  position: opt.func<(event: MessageEvent, delivery: Delivery) => PositionValue | undefined>(DERIVES),
  /** A Powertools Logger; default one with service POWERTOOLS_SERVICE_NAME or the pipeline. */
  logger: opt.custom<Logger>("a Powertools Logger instance", isObject),
  /** A Powertools Metrics instance; default namespace `EffectivelyOnce` (or POWERTOOLS_METRICS_NAMESPACE). */
  metrics: opt.custom<Metrics>("a Powertools Metrics instance", isObject),
  /**
   * Deliveries processed at once (SQS batches; FIFO: groups at once, each group in order). Default 10; the stream
   * wrappers' default is STREAM_CONCURRENCY (lanes of subjects at once, each subject's records in order).
   */
  concurrency: opt.integer({ min: 1 }),
  /**
   * Stream wrappers only: run only the newest record of each subject in a batch (greatest position; the last one
   * on a tie) and acknowledge the older ones as `stale` once it is acknowledged (they would be stale by the guard's
   * rule as soon as it commits). Right for handlers where the newest state wins (a projection, a cache, a search
   * index); wrong when every record is an effect of its own (a ledger, a counter, a notification). If the newest
   * fails, the older ones are not acknowledged either (the checkpoint falls back to the oldest). Default false.
   */
  newestPerSubject: opt.boolean({ default: false }),
  /** Extend SQS visibility while records are in progress. Default off. */
  visibilityHeartbeat: opt.custom<VisibilityHeartbeatOptions | false>(
    "an object or false",
    (v) => v === false || isObject(v),
  ),
  /** Client for the visibility heartbeat. Default: a new SQSClient (loaded on first use). */
  sqsClient: opt.custom<SqsSender>(
    "an SQSClient",
    (v) => typeof (v as SqsSender | null)?.send === "function",
  ),
  /** Non-S3 SQS bodies and EventBridge events: `accept` as MessageEvents, or `reject` as malformed. Default reject. */
  messages: PARSE_OPTIONS.messages,
  /** SQS message attribute whose value becomes the correlation id when present. */
  correlationAttribute: PARSE_OPTIONS.correlationAttribute,
  /** The handler's signal aborts, and waiting stops, this long before the Lambda times out. Default 1 000. */
  deadlineMarginMs: opt.integer({ min: 0, default: 1000 }),
};

/** The options of mode `run` (the default). The guard's options pass through unchanged (see GuardOptions for each). */
export interface EffectivelyOnceOptions
  extends Omit<opt.InputOf<typeof EFFECTIVELY_ONCE_OPTIONS>, "mode" | (typeof STREAMS_ONLY)[number]> {
  /** `run` (default): claim, run the handler under a lease, commit. */
  mode?: "run";
}

/**
 * The options of mode `apply`: those of `run`, less what needs a handler running under a lease (lease renewals,
 * the SQS visibility heartbeat). `leaseMs` still bounds waiting when there is no Lambda context.
 */
export interface EffectivelyOnceApplyOptions
  extends Omit<EffectivelyOnceOptions, "mode" | "heartbeatMs" | "visibilityHeartbeat" | "sqsClient"> {
  mode: "apply";
  heartbeatMs?: never;
  visibilityHeartbeat?: false;
  sqsClient?: never;
}

/** Either mode's options. */
export type WrapperOptions = EffectivelyOnceOptions | EffectivelyOnceApplyOptions;

/** What only SQS, S3 and EventBridge invocations use: a stream wrapper refuses them (`OptionsError`). */
export const NOT_FOR_STREAMS = [
  "messages",
  "orderS3Events",
  "visibilityHeartbeat",
  "sqsClient",
  "correlationAttribute",
] as const;

/** What only the stream wrappers take: the others refuse it (`OptionsError`). */
export const STREAMS_ONLY = ["newestPerSubject"] as const;

/**
 * Lanes at once on a stream batch when `concurrency` is not given. A lane is one subject's records in order, so
 * more lanes never reorder a subject; 10 (the SQS default, sized for SQS's batches of 10) would leave most of a
 * batch waiting whenever it carries more subjects. 100 is the event source mapping's default batch size: a default
 * batch of distinct keys runs all at once, as Powertools' BatchProcessor runs it, while a batch of up to 10 000
 * records still has a bound on the requests in flight.
 */
export const STREAM_CONCURRENCY = 100;

/**
 * The options of a stream wrapper (`kinesisHandler`, `dynamodbStreamHandler`) of mode `M`: the others' options less
 * those of SQS, S3 and EventBridge, with the key derivations and the payload fingerprint typed for the stream's
 * records `E`.
 */
export type StreamOptionsOf<M extends WrapperMode, E extends StreamRecordEvent> = Omit<
  OptionsOf<M>,
  (typeof NOT_FOR_STREAMS)[number] | "subject" | "identity" | "position" | "payloadFingerprint"
> & {
  /** What order and exclusivity are scoped to. Default: the partition key (Kinesis), the item (DynamoDB). */
  subject?: Derivation<E, string>;
  /** The idempotency key. Default: `p:<position>` with a `position`, else from the sequence number. */
  identity?: Derivation<E, string>;
  /** Order within the subject (a version). Default: the sequence number, unless `identity` alone is given. */
  position?: Derivation<E, PositionValue | undefined>;
  /** As for the other wrappers; `true` fingerprints the record (Kinesis: its data; DynamoDB: the change). */
  payloadFingerprint?: boolean | ((event: E) => string);
  /**
   * Run only the newest record of each subject in a batch; the older ones end `stale` once it is acknowledged.
   * Only for handlers where the newest state wins (never a ledger or a counter). Default false. docs/lambda.md.
   */
  newestPerSubject?: boolean;
};

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null;
}

/** The wrapper's own options after validation (the guard's are resolved into its one guard). */
type OwnResolved = Omit<
  opt.Resolved<typeof EFFECTIVELY_ONCE_OPTIONS>,
  GuardPassThroughKey | "payloadFingerprint" | "visibilityHeartbeat" | "messages" | "correlationAttribute"
>;

export interface ResolvedOptions
  extends Omit<OwnResolved, "subject" | "identity" | "position" | "concurrency"> {
  concurrency: number;
  /** Built once per wrapper; each event is observed through its call's `onEvent`. */
  guard: Guard;
  /** The derivations, for whichever derivable events the wrapper's trigger brings (typed per wrapper). */
  subject: Derivation<DerivableEvent, string> | undefined;
  identity: Derivation<DerivableEvent, string> | undefined;
  position: Derivation<DerivableEvent, PositionValue | undefined> | undefined;
  payloadFingerprint: ((event: AnyHandledEvent) => string) | undefined;
  /**
   * Built by a stream wrapper, whose derivations take its stream's records. Elsewhere (`wrapHandler`, Middy) they are
   * typed for application messages, and a stream batch reaching them is refused (invocation.ts).
   */
  streams: boolean;
  visibilityHeartbeat: ResolvedVisibilityHeartbeatOptions | undefined;
  parse: ResolvedParseOptions;
}

/** What only a handler running under a lease uses: refused in mode `apply`, where nothing holds a lease. */
const RUN_ONLY = ["heartbeatMs", "visibilityHeartbeat", "sqsClient"] as const;

/**
 * Validates eagerly (at cold start, not at the first event): unknown keys, types, consistency; builds the guard.
 * `streams`: for a stream wrapper, which refuses the options of the other triggers and needs no `messages` for its
 * derivations.
 */
export function resolveOptions(
  what: string,
  options: WrapperOptions | StreamOptionsOf<WrapperMode, StreamRecordEvent>,
  streams = false,
): ResolvedOptions {
  const o = opt.resolveOptions(what, EFFECTIVELY_ONCE_OPTIONS, options as WrapperOptions);
  const given = (streams ? NOT_FOR_STREAMS : STREAMS_ONLY).filter(
    (key) => (options as Record<string, unknown>)[key] !== undefined,
  );
  const forWhom = streams ? "not for stream records" : "for the stream wrappers only";
  opt.optionsRule(what, given.length === 0, `${given.join(", ")}: ${forWhom}`);
  // Records with no position (an identity alone: dedupe only) have no order, so none of them is the newest.
  opt.optionsRule(
    what,
    !o.newestPerSubject || o.identity === undefined || o.position !== undefined,
    "newestPerSubject needs positions: with identity alone the records are deduplicated only, none is newer",
  );
  if (o.mode === "apply") {
    const runOnly = RUN_ONLY.filter((key) => o[key] !== undefined && o[key] !== false);
    opt.optionsRule(
      what,
      runOnly.length === 0,
      `${runOnly.join(", ")}: for mode "run" only (mode "apply" runs no handler under a lease)`,
    );
  }
  opt.optionsRule(
    what,
    streams || (o.subject ?? o.identity ?? o.position) === undefined || o.messages === "accept",
    'subject/identity/position derive keys of application messages, which need messages: "accept"',
  );
  const hb = o.visibilityHeartbeat;
  return {
    guard: guardOf(what, o),
    mode: o.mode,
    pipeline: o.pipeline,
    orderS3Events: o.orderS3Events,
    // Typed per wrapper (MessageEvent here, the stream's records in StreamOptionsOf): each gets its trigger's events.
    subject: o.subject as ResolvedOptions["subject"],
    identity: o.identity as ResolvedOptions["identity"],
    position: o.position as ResolvedOptions["position"],
    payloadFingerprint:
      o.payloadFingerprint === true
        ? defaultFingerprint
        : (o.payloadFingerprint as ResolvedOptions["payloadFingerprint"]) || undefined,
    logger: o.logger,
    metrics: o.metrics,
    concurrency: o.concurrency ?? (streams ? STREAM_CONCURRENCY : 10),
    newestPerSubject: o.newestPerSubject,
    visibilityHeartbeat:
      hb === undefined || hb === false ? undefined : resolveVisibilityHeartbeatOptions(what, hb),
    sqsClient: o.sqsClient,
    parse: {
      messages: o.messages,
      ...(o.correlationAttribute !== undefined ? { correlationAttribute: o.correlationAttribute } : {}),
    },
    deadlineMarginMs: o.deadlineMarginMs,
    streams,
  };
}

/** The wrapper's one guard, from the guard options given; its rules' errors name the wrapper. */
function guardOf(what: string, o: Pick<GuardOptions, GuardPassThroughKey>): Guard {
  const given: GuardOptions = { store: o.store };
  for (const key of GUARD_PASS_THROUGH_KEYS) {
    if (o[key] !== undefined) (given as unknown as Record<string, unknown>)[key] = o[key];
  }
  try {
    return createGuard(given);
  } catch (error) {
    if (error instanceof OptionsError) throw new OptionsError(`${what}: ${error.message}`, { cause: error });
    throw error;
  }
}

/**
 * A message's body; an S3 event's ETag, size, version and operation; a Kinesis record's data; a DynamoDB change's
 * item, name and sequence number: what "the same content" means for each.
 */
export function defaultFingerprint(event: AnyHandledEvent): string {
  const h = createHash("sha256");
  if (event.kind === "message") h.update(event.body);
  else if (event.kind === "kinesis") h.update(event.data);
  else if (event.kind === "dynamodb")
    h.update(JSON.stringify([event.item, event.eventName, event.sequenceNumber]));
  else
    h.update(
      JSON.stringify([event.etag ?? null, event.size ?? null, event.versionId ?? null, event.operation]),
    );
  return h.digest("base64url");
}
