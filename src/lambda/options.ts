import { createHash } from "node:crypto";
import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import type { Delivery, MessageEvent, S3ObjectEvent } from "../core/event.js";
import {
  GUARD_OPTIONS,
  GUARD_PASS_THROUGH_KEYS,
  type GuardContext,
  type GuardOptions,
  resolveGuardOptions,
} from "../core/guard.js";
import {
  boolean,
  custom,
  func,
  integer,
  optionsRule,
  pickFields,
  resolveOptions as resolveSchema,
  schemaFor,
  string,
} from "../core/options.js";
import { PARSE_OPTIONS } from "../sources/options.js";
import {
  type ResolvedVisibilityHeartbeatOptions,
  resolveVisibilityHeartbeatOptions,
  type SqsSender,
  type VisibilityHeartbeatOptions,
} from "./visibility-heartbeat.js";

/** What the user's handler receives: an S3 object event, or an application message (`messages: "accept"`). */
export type HandledEvent = S3ObjectEvent | MessageEvent;

/** The guard's context plus where the event came from and a logger that carries its correlation id. */
export interface HandlerContext extends GuardContext {
  delivery: Delivery;
  /** Undefined when the wrapper is called without a Lambda context (tests, scripts). */
  lambdaContext: Context | undefined;
  /** A child of the configured logger with `correlation_id` set (created on first access). */
  readonly logger: Logger;
}

/** The user's handler. Its (JSON) result is committed with the event and replayed to duplicates. */
export type EventHandler<R = unknown> = (event: HandledEvent, ctx: HandlerContext) => Promise<R>;

export type PositionValue = number | bigint | Date | string;

/** The guard's options pass through unchanged (see GuardOptions for each). */
export interface EffectivelyOnceOptions extends Pick<GuardOptions, GuardPassThroughKey> {
  /** Metric dimension `pipeline` and a field on every log line. Default: the Lambda function name. */
  pipeline?: string;
  /**
   * S3 events: order them by sequencer within `bucket/key` (default true: an older event is skipped as stale once
   * a newer one is committed — right when the newest state wins, e.g. a thumbnail). false: deduplicate only —
   * every distinct event is processed once and none is skipped (e.g. one record per upload, re-uploads included).
   */
  orderS3Events?: boolean;
  /**
   * Application messages (`messages: "accept"`): what order and exclusivity are scoped to, e.g. the order
   * id. Default: the EventBridge id, SNS message id or SQS message id. S3 events always use `bucket/key`.
   * A throw marks the message malformed.
   */
  subject?: (event: MessageEvent, delivery: Delivery) => string;
  /**
   * Application messages: what makes two deliveries the same event (an idempotency key). Default: the
   * position when there is one (so a resend of the same version is a duplicate), else the default subject.
   */
  identity?: (event: MessageEvent, delivery: Delivery) => string;
  /** Application messages: order within the subject (a version, a timestamp). Undefined: dedupe only. */
  position?: (event: MessageEvent, delivery: Delivery) => PositionValue | undefined;
  /**
   * Detect an identity reused for other content: `true` fingerprints the payload (a message's body; an S3 event's
   * ETag, size and version), or give a function of the event. A delivery whose identity was committed with
   * another fingerprint ends `conflict` (logged, counted, not acknowledged: retried, then dead-lettered) instead
   * of being replayed as a duplicate. Default off.
   */
  payloadFingerprint?: boolean | ((event: HandledEvent) => string);
  logger?: Logger;
  metrics?: Metrics;
  /** Deliveries processed at once (SQS batches; FIFO: groups at once, each group in order). Default 10. */
  concurrency?: number;
  /** Extend SQS visibility while records are in progress. Default off. */
  visibilityHeartbeat?: VisibilityHeartbeatOptions | false;
  /** Client for the visibility heartbeat. Default: a new SQSClient (loaded on first use). */
  sqsClient?: SqsSender;
  /** SQS message attribute whose value becomes the correlation id when present. */
  correlationAttribute?: string;
  /** Non-S3 SQS bodies and EventBridge events: `accept` as MessageEvents, or `reject` as malformed. Default reject. */
  messages?: "accept" | "reject";
  /** The handler's signal aborts, and waiting stops, this long before the Lambda times out. Default 1 000. */
  deadlineMarginMs?: number;
}

type GuardPassThroughKey = (typeof GUARD_PASS_THROUGH_KEYS)[number];
const DERIVES = { expected: "a function of (message, delivery)" };

/** The wrappers' options: the guard's fields, and the adapter's own. */
export const EFFECTIVELY_ONCE_OPTIONS = schemaFor<EffectivelyOnceOptions>()({
  ...pickFields(GUARD_OPTIONS, GUARD_PASS_THROUGH_KEYS),
  pipeline: string(),
  orderS3Events: boolean({ default: true }),
  payloadFingerprint: custom<boolean | ((event: HandledEvent) => string)>(
    "a boolean or a function of the event",
    (v) => typeof v === "boolean" || typeof v === "function",
  ),
  subject: func<NonNullable<EffectivelyOnceOptions["subject"]>>(DERIVES),
  identity: func<NonNullable<EffectivelyOnceOptions["identity"]>>(DERIVES),
  position: func<NonNullable<EffectivelyOnceOptions["position"]>>(DERIVES),
  logger: custom<Logger>("a Powertools Logger instance", isObject),
  metrics: custom<Metrics>("a Powertools Metrics instance", isObject),
  concurrency: integer({ min: 1, default: 10 }),
  visibilityHeartbeat: custom<VisibilityHeartbeatOptions | false>(
    "an object or false",
    (v) => v === false || isObject(v),
  ),
  sqsClient: custom<SqsSender>("an SQSClient", (v) => typeof (v as SqsSender | null)?.send === "function"),
  ...PARSE_OPTIONS,
  deadlineMarginMs: integer({ min: 0, default: 1000 }),
});

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null;
}

export interface ResolvedOptions {
  guard: Omit<GuardOptions, "onEvent">;
  pipeline: string | undefined;
  orderS3Events: boolean;
  subject: EffectivelyOnceOptions["subject"];
  identity: EffectivelyOnceOptions["identity"];
  position: EffectivelyOnceOptions["position"];
  payloadFingerprint: ((event: HandledEvent) => string) | undefined;
  logger: Logger | undefined;
  metrics: Metrics | undefined;
  concurrency: number;
  visibilityHeartbeat: ResolvedVisibilityHeartbeatOptions | undefined;
  sqsClient: SqsSender | undefined;
  parse: { messages: "accept" | "reject"; correlationAttribute?: string };
  deadlineMarginMs: number;
}

/** Validates eagerly (at cold start, not at the first event): unknown keys, types, consistency. */
export function resolveOptions(what: string, options: EffectivelyOnceOptions): ResolvedOptions {
  const o = resolveSchema(what, EFFECTIVELY_ONCE_OPTIONS, options);
  const guard: Omit<GuardOptions, "onEvent"> = { store: o.store };
  for (const key of GUARD_PASS_THROUGH_KEYS) {
    if (options[key] !== undefined) (guard as Record<string, unknown>)[key] = options[key];
  }
  resolveGuardOptions(what, guard); // the rules that relate guard options, as createGuard checks them per delivery
  optionsRule(
    what,
    (o.subject ?? o.identity ?? o.position) === undefined || o.messages === "accept",
    'subject/identity/position derive keys of application messages, which need messages: "accept"',
  );
  const hb = o.visibilityHeartbeat;
  return {
    guard,
    pipeline: o.pipeline,
    orderS3Events: o.orderS3Events,
    subject: o.subject,
    identity: o.identity,
    position: o.position,
    payloadFingerprint:
      o.payloadFingerprint === true ? defaultFingerprint : o.payloadFingerprint || undefined,
    logger: o.logger,
    metrics: o.metrics,
    concurrency: o.concurrency,
    visibilityHeartbeat:
      hb === undefined || hb === false ? undefined : resolveVisibilityHeartbeatOptions(what, hb),
    sqsClient: o.sqsClient,
    parse: {
      messages: o.messages,
      ...(o.correlationAttribute !== undefined ? { correlationAttribute: o.correlationAttribute } : {}),
    },
    deadlineMarginMs: o.deadlineMarginMs,
  };
}

/** A message's body; an S3 event's ETag, size, version and operation: what "the same content" means for each. */
export function defaultFingerprint(event: HandledEvent): string {
  const content =
    event.kind === "message"
      ? event.body
      : JSON.stringify([event.etag ?? null, event.size ?? null, event.versionId ?? null, event.operation]);
  return createHash("sha256").update(content).digest("base64url");
}
