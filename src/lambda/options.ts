import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import { describeValue } from "../core/describe-value.js";
import { OptionsError } from "../core/errors.js";
import type { Delivery, MessageEvent, S3ObjectEvent } from "../core/event.js";
import {
  type BusyPolicy,
  createGuard,
  GUARD_PASS_THROUGH_KEYS,
  type GuardContext,
  type GuardOptions,
  type InFlightPolicy,
} from "../core/guard.js";
import { rejectUnknownKeys, requireOneOf, requirePositiveInteger } from "../core/options.js";
import type { StateStore } from "../core/store.js";
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

export interface EffectivelyOnceOptions {
  store: StateStore;
  /** Metric dimension `pipeline` and a field on every log line. Default: the Lambda function name. */
  pipeline?: string;
  /** Claim lease; see the guard. Default 30 000. */
  leaseMs?: number;
  heartbeatMs?: number;
  busy?: BusyPolicy;
  inFlight?: InFlightPolicy;
  expiresAfterSeconds?: number;
  waitIntervalMs?: number;
  maxWaitIntervalMs?: number;
  storeResult?: boolean;
  /** Results larger than this are not stored for replay; see the guard. Default: the store's limit. */
  maxStoredResultBytes?: number;
  /** The most that workers' clocks may differ; see the guard. Default min(1000, leaseMs / 10). */
  clockSkewMs?: number;
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

const KEYS = [
  ...GUARD_PASS_THROUGH_KEYS,
  "pipeline",
  "orderS3Events",
  "subject",
  "identity",
  "position",
  "logger",
  "metrics",
  "concurrency",
  "visibilityHeartbeat",
  "sqsClient",
  "correlationAttribute",
  "messages",
  "deadlineMarginMs",
] as const;

export interface ResolvedOptions {
  guard: Omit<GuardOptions, "onEvent">;
  pipeline: string | undefined;
  orderS3Events: boolean;
  subject: EffectivelyOnceOptions["subject"];
  identity: EffectivelyOnceOptions["identity"];
  position: EffectivelyOnceOptions["position"];
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
  if (typeof options !== "object" || options === null)
    throw new OptionsError(`${what}: options are required`);
  rejectUnknownKeys(what, options, KEYS);
  const guard: Omit<GuardOptions, "onEvent"> = { store: options.store };
  for (const key of GUARD_PASS_THROUGH_KEYS) {
    if (options[key] !== undefined) (guard as Record<string, unknown>)[key] = options[key];
  }
  createGuard(guard); // validates the guard options the same way createGuard will per delivery

  for (const key of ["subject", "identity", "position"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "function") {
      throw new OptionsError(`${what}: ${key} must be a function of (message, delivery)`);
    }
  }
  const messages = requireOneOf(what, "messages", options.messages ?? "reject", [
    "accept",
    "reject",
  ] as const);
  const derives = options.subject ?? options.identity ?? options.position;
  if (derives && messages !== "accept") {
    throw new OptionsError(
      `${what}: subject/identity/position derive keys of application messages, which need messages: "accept"`,
    );
  }
  if (
    options.pipeline !== undefined &&
    (typeof options.pipeline !== "string" || options.pipeline.length === 0)
  ) {
    throw new OptionsError(`${what}: pipeline must be a non-empty string`);
  }
  if (
    options.correlationAttribute !== undefined &&
    (typeof options.correlationAttribute !== "string" || options.correlationAttribute.length === 0)
  ) {
    throw new OptionsError(`${what}: correlationAttribute must be a non-empty string`);
  }
  for (const key of ["logger", "metrics"] as const) {
    const value = options[key] as unknown;
    if (value !== undefined && (typeof value !== "object" || value === null)) {
      throw new OptionsError(
        `${what}: ${key} must be a Powertools ${key === "logger" ? "Logger" : "Metrics"} instance`,
      );
    }
  }
  if (options.sqsClient !== undefined && typeof options.sqsClient?.send !== "function") {
    throw new OptionsError(`${what}: sqsClient must be an SQSClient`);
  }
  const deadlineMarginMs = options.deadlineMarginMs ?? 1000;
  if (!Number.isSafeInteger(deadlineMarginMs) || deadlineMarginMs < 0) {
    throw new OptionsError(
      `${what}: deadlineMarginMs must be a non-negative integer, got ${describeValue(deadlineMarginMs)}`,
    );
  }
  const hb = options.visibilityHeartbeat;
  return {
    guard,
    pipeline: options.pipeline,
    orderS3Events: requireBoolean(what, "orderS3Events", options.orderS3Events ?? true),
    subject: options.subject,
    identity: options.identity,
    position: options.position,
    logger: options.logger,
    metrics: options.metrics,
    concurrency: requirePositiveInteger(what, "concurrency", options.concurrency ?? 10),
    visibilityHeartbeat:
      hb === undefined || hb === false ? undefined : resolveVisibilityHeartbeatOptions(what, hb),
    sqsClient: options.sqsClient,
    parse: {
      messages,
      ...(options.correlationAttribute !== undefined
        ? { correlationAttribute: options.correlationAttribute }
        : {}),
    },
    deadlineMarginMs,
  };
}

function requireBoolean(what: string, name: string, value: unknown): boolean {
  if (typeof value !== "boolean")
    throw new OptionsError(`${what}: ${name} must be a boolean, got ${describeValue(value)}`);
  return value;
}
