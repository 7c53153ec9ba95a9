import { createHash } from "node:crypto";
import type { Position } from "../core/position.js";
import type { HandledEvent } from "../lambda/options.js";
import { NotDispatchedError, PayloadValueError } from "./errors.js";
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
 * wrote the keys in (Lambda compares payloads byte for byte). Only values JSON carries as they are: whatever it
 * accepts, `JSON.parse` gives back equal (an object property whose value is `undefined` counts as absent, as JSON
 * writes it). Anything else is a `PayloadValueError` naming where it is, so that neither the payload nor its
 * fingerprint can differ from the value built: a non-finite number or -0, a bigint, function or symbol, `undefined`
 * in an array or as the whole value, a sparse array or one with other own properties, an object that is not plain
 * (a `Date`, `Map`, `Set`, typed array, boxed primitive, class instance: JSON writes another value or `{}`), a
 * symbol key, a non-enumerable or accessor property, an own `"__proto__"` key (JSON.parse makes it an own property,
 * an object literal or assignment the prototype), and a cycle.
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) throw new PayloadValueError("undefined is not JSON", "");
  return canonical(value, "", new Set());
}

function canonical(v: unknown, path: string, open: Set<object>): string {
  if (v === null || typeof v === "boolean" || typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new PayloadValueError(`${v} is not a JSON number`, path);
    if (Object.is(v, -0)) throw new PayloadValueError("-0 is written as 0 by JSON: pass 0", path);
    return JSON.stringify(v);
  }
  if (typeof v !== "object") throw new PayloadValueError(`a payload cannot carry a ${typeof v}`, path);
  if (open.has(v)) throw new PayloadValueError("a cycle: JSON is a tree", path);
  open.add(v);
  try {
    return Array.isArray(v) ? canonicalArray(v, path, open) : canonicalObject(v, path, open);
  } finally {
    open.delete(v);
  }
}

function canonicalArray(v: unknown[], path: string, open: Set<object>): string {
  if (Object.getPrototypeOf(v) !== Array.prototype) {
    throw new PayloadValueError("an array of a subclass: JSON gives back a plain array", path);
  }
  const keys = Reflect.ownKeys(v);
  if (keys.length !== v.length + 1) {
    throw new PayloadValueError(
      keys.length < v.length + 1
        ? "a sparse array: JSON writes its holes as null"
        : "an array with other own properties: JSON drops them",
      path,
    );
  }
  const items: string[] = [];
  for (let i = 0; i < v.length; i++) {
    const at = `${path}[${i}]`;
    if (v[i] === undefined) throw new PayloadValueError("undefined in an array: JSON writes null", at);
    items.push(canonical(v[i], at, open));
  }
  return `[${items.join(",")}]`;
}

function canonicalObject(v: object, path: string, open: Set<object>): string {
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    const name = (proto as { constructor?: { name?: string } }).constructor?.name || "an object";
    throw new PayloadValueError(`a ${name} is not a plain object: JSON writes another value`, path);
  }
  const fields = new Map<string, string>();
  for (const key of Reflect.ownKeys(v)) {
    const at = path ? `${path}.${String(key)}` : String(key);
    if (typeof key === "symbol") throw new PayloadValueError("a symbol key: JSON drops it", at);
    if (key === "__proto__") throw new PayloadValueError('an own "__proto__" key', at);
    const d = Object.getOwnPropertyDescriptor(v, key) as PropertyDescriptor;
    if (!d.enumerable || !("value" in d)) {
      throw new PayloadValueError("a non-enumerable or accessor property: pass plain data", at);
    }
    if (d.value === undefined) continue; // absent, as JSON writes it
    fields.set(key, `${JSON.stringify(key)}:${canonical(d.value, at, open)}`);
  }
  return `{${keyOrder([...fields.keys()])
    .map((k) => fields.get(k))
    .join(",")}}`;
}

/**
 * The keys in the order the first version wrote them (the guard keeps fingerprints of these bytes): sorted, then
 * as an object enumerates them, which puts integer-like keys first, in numeric order.
 */
function keyOrder(keys: string[]): string[] {
  const o: Record<string, true> = Object.create(null);
  for (const k of keys.sort()) o[k] = true;
  return Object.keys(o);
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
