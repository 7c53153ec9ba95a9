import { createHash } from "node:crypto";
import type { Position } from "../core/position.js";
import type { HandledEvent } from "../lambda/options.js";
import { NotDispatchedError } from "./errors.js";
import { durableExecutionName } from "./execution-name.js";

/** The envelope's version: a durable handler refuses a payload of another shape. */
const PAYLOAD_VERSION = 1;

/**
 * The fields of an event that every delivery of it carries alike. Receive metadata (receipt handle, receive count,
 * message ids of the envelope) changes between deliveries, and the S3 event name and time differ between envelopes
 * (`ObjectCreated:Put` direct, `Object Created` on EventBridge): in the payload, they would make a redelivery's Invoke
 * look like another payload to Lambda (`DurableExecutionAlreadyStartedException`).
 */
export type StableEvent =
  | {
      kind: "s3";
      bucket: string;
      key: string;
      versionId: string | null;
      sequencer: string | null;
      operation: string;
      size: number | null;
      etag: string | null;
    }
  | { kind: "message"; body: string };

/** Which execution a payload belongs to: what a guarded step keys its marker and fence on. */
export interface DispatchedExecution {
  /** The durable execution name (`durableExecutionName(subject, identity)`). */
  executionName: string;
  subject: string;
  identity: string;
  /** The event's position; null for events without one (deduplicated only). */
  position: Position | null;
}

/** What the dispatcher sends the durable function: the execution, the event's stable fields and your `detail`. */
export interface DispatchedPayload<D = unknown> {
  /** The envelope's version. */
  effectivelyOnce: typeof PAYLOAD_VERSION;
  execution: DispatchedExecution;
  event: StableEvent;
  /** What the dispatcher's `detail(event)` returned (null without one): built from stable fields only. */
  detail: D | null;
}

/** The stable fields of an event (see `StableEvent`). */
export function stableEvent(event: HandledEvent): StableEvent {
  if (event.kind === "message") return { kind: "message", body: event.body };
  return {
    kind: "s3",
    bucket: event.bucket,
    key: event.key,
    versionId: event.versionId ?? null,
    sequencer: event.sequencer ?? null,
    operation: event.operation,
    size: event.size ?? null,
    etag: event.etag ?? null,
  };
}

/** The payload of one event's execution. */
export function dispatchedPayload<D>(
  event: HandledEvent,
  keys: { subject: string; identity: string; position?: Position | undefined },
  detail: D | undefined,
): DispatchedPayload<D> {
  return {
    effectivelyOnce: PAYLOAD_VERSION,
    execution: {
      executionName: durableExecutionName(keys.subject, keys.identity),
      subject: keys.subject,
      identity: keys.identity,
      position: keys.position ?? null,
    },
    event: stableEvent(event),
    detail: detail ?? null,
  };
}

/**
 * JSON with object keys sorted at every level: the same value gives the same bytes whatever order its builder
 * wrote the keys in (Lambda compares payloads byte for byte). Throws on values JSON cannot carry as they are.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === "bigint" || typeof v === "function" || typeof v === "symbol") {
      throw new TypeError(`a payload cannot carry a ${typeof v}`);
    }
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/** SHA-256 (base64url) of a payload's canonical JSON: the guard's payload fingerprint. */
export function payloadDigest(json: string): string {
  return createHash("sha256").update(json, "utf8").digest("base64url");
}

/** The execution a durable handler's payload names; throws `NotDispatchedError` for any other input. */
export function dispatchedExecution(payload: unknown): DispatchedExecution {
  const p = payload as Partial<DispatchedPayload> | null;
  const e = p?.execution;
  if (
    p?.effectivelyOnce !== PAYLOAD_VERSION ||
    typeof e !== "object" ||
    e === null ||
    typeof e.executionName !== "string" ||
    typeof e.subject !== "string" ||
    typeof e.identity !== "string" ||
    (e.position !== null && typeof e.position !== "string")
  ) {
    throw new NotDispatchedError(
      "the durable handler's payload was not built by the effectively-once dispatcher (no execution envelope)",
    );
  }
  if (e.executionName !== durableExecutionName(e.subject, e.identity)) {
    throw new NotDispatchedError(`execution name ${e.executionName} does not match its subject and identity`);
  }
  return { executionName: e.executionName, subject: e.subject, identity: e.identity, position: e.position };
}
