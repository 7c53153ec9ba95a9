import type * as events from "aws-cdk-lib/aws-events";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { OptionsError } from "../core/errors.js";
import { custom, integer, resolveOptions, schemaFor, string } from "../core/options.js";
import type { OutboxOptions } from "./props.js";

const WHAT = "EffectivelyOncePipeline outbox";
/** A DynamoDB stream keeps records 24 hours: an older record is gone, whatever the mapping's setting. */
const DYNAMODB_STREAM_RETENTION_SECONDS = 24 * 3600;

const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
const listOf = (has: string) => (v: unknown) =>
  Array.isArray(v) && v.every((x) => isObject(x) && typeof (x as Record<string, unknown>)[has] === "string");

const OUTBOX_OPTIONS = schemaFor<OutboxOptions>()({
  relayEntry: string(),
  relayCode: custom<lambda.Code>("a lambda.Code", isObject),
  relayHandler: string(),
  queues: custom<sqs.IQueue[], { default: sqs.IQueue[] }>(
    "a list of queues (sqs.IQueue)",
    listOf("queueArn"),
    {
      default: [],
    },
  ),
  topics: custom<sns.ITopic[], { default: sns.ITopic[] }>(
    "a list of topics (sns.ITopic)",
    listOf("topicArn"),
    {
      default: [],
    },
  ),
  eventBuses: custom<events.IEventBus[], { default: events.IEventBus[] }>(
    "a list of event buses (events.IEventBus)",
    listOf("eventBusArn"),
    { default: [] },
  ),
  relayTimeoutSeconds: integer({ min: 1, max: 900, default: 30 }),
  batchSize: integer({ min: 1, max: 10_000, default: 100 }),
  // Never -1 (infinite): a poison batch would block its shard until the stream trims it.
  retryAttempts: integer({ min: 0, max: 10_000, default: 10 }),
  maxRecordAgeSeconds: integer({ min: 60, max: DYNAMODB_STREAM_RETENTION_SECONDS, default: 12 * 3600 }),
});

/** The relay's code: a file to bundle, or prebuilt code with an explicit `file.export` handler. */
export type RelaySource =
  | { readonly kind: "bundle"; readonly entry: string; readonly handler: string }
  | { readonly kind: "prebuilt"; readonly code: lambda.Code; readonly handler: string };

/** The `outbox` prop, checked, defaults filled in. */
export interface OutboxSettings {
  readonly relay: RelaySource;
  readonly queues: readonly sqs.IQueue[];
  readonly topics: readonly sns.ITopic[];
  readonly eventBuses: readonly events.IEventBus[];
  readonly relayTimeoutSeconds: number;
  readonly batchSize: number;
  readonly retryAttempts: number;
  readonly maxRecordAgeSeconds: number;
}

export function resolveOutbox(outbox: OutboxOptions): OutboxSettings {
  const o = resolveOptions(WHAT, OUTBOX_OPTIONS, outbox);
  return {
    relay: relaySource(o.relayEntry, o.relayCode, o.relayHandler),
    queues: o.queues,
    topics: o.topics,
    eventBuses: o.eventBuses,
    relayTimeoutSeconds: o.relayTimeoutSeconds,
    batchSize: o.batchSize,
    retryAttempts: o.retryAttempts,
    maxRecordAgeSeconds: o.maxRecordAgeSeconds,
  };
}

function relaySource(entry?: string, code?: lambda.Code, handler?: string): RelaySource {
  if (entry !== undefined && code !== undefined) {
    throw new OptionsError(`${WHAT}: give either relayEntry (bundled) or relayCode (prebuilt), not both`);
  }
  if (code !== undefined) {
    if (!handler?.includes(".")) {
      throw new OptionsError(`${WHAT}: with relayCode, relayHandler must name the file and the export`);
    }
    return { kind: "prebuilt", code, handler };
  }
  if (entry === undefined) {
    throw new OptionsError(
      `${WHAT}: relayEntry (the relay's handler file: outboxStreamHandler, docs/deploy.md) or relayCode is required`,
    );
  }
  return { kind: "bundle", entry, handler: handler ?? "handler" };
}
