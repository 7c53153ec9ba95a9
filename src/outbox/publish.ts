import { OptionsError } from "../core/errors.js";
import { requireKeyText } from "../core/key-text.js";
import type { AtomicWrite } from "../core/store.js";
import {
  MAX_OUTBOX_ATTRIBUTES,
  OUTBOX_MESSAGE_ID_ATTRIBUTE,
  outboxMessageId,
  outboxOrder,
} from "./message-id.js";
import type { Destination, Outbox, OutboxEntry, PublishOptions } from "./types.js";

/** What `ctx.publish` of one run needs: the event, the fence its commit takes, the clock, and where writes go. */
export interface PublishScope {
  subject: string;
  identity: string;
  stateKey: string;
  fence: number;
  nowMs(): number;
  atCommit(write: AtomicWrite): void;
}

/** `ctx.publish(destination, message, options)`. */
export type Publish = (destination: Destination, message: unknown, options?: PublishOptions) => string;

/**
 * The `publish` of one run: each call adds an outbox entry to the commit (through `atCommit`, so the store checks it
 * can fold it) and returns the message's id. Without an outbox, `publish` throws an `OptionsError` saying so.
 * Names are checked per run: a run that publishes two messages under one name would give them one id.
 */
export function publisher(outbox: Outbox | undefined, scope: PublishScope): Publish {
  const names = new Set<string>();
  return (destination, message, options = {}) => {
    if (outbox === undefined) {
      throw new OptionsError(
        "ctx.publish needs the guard's `outbox` option (an engine's outbox: docs/effects.md)",
      );
    }
    checkDestination(destination);
    const name = options.name ?? `#${names.size + 1}`;
    if (options.name !== undefined) {
      if (typeof name !== "string" || name.length === 0 || name.startsWith("#")) {
        throw new OptionsError(
          `publish: a message's name is a non-empty string not starting with # (got ${String(name)})`,
        );
      }
      requireKeyText("message name", name);
    }
    if (names.has(name))
      throw new OptionsError(`publish: the name ${JSON.stringify(name)} is used twice in one run`);
    const entry: OutboxEntry = {
      messageId: outboxMessageId(scope.subject, scope.identity, name),
      subject: scope.subject,
      order: outboxOrder(scope.fence, names.size),
      destination,
      body: bodyOf(destination, message),
      groupId: options.groupId ?? scope.subject,
      ...(options.attributes !== undefined ? { attributes: checkAttributes(options.attributes) } : {}),
      createdAtMs: scope.nowMs(),
    };
    scope.atCommit(outbox.entryWrite(entry, scope.stateKey));
    names.add(name);
    return entry.messageId;
  };
}

function checkDestination(d: Destination): void {
  const ok =
    (d?.kind === "sqs" && isText(d.queueUrl)) ||
    (d?.kind === "sns" && isText(d.topicArn)) ||
    (d?.kind === "eventbridge" && isText(d.eventBusName) && isText(d.source) && isText(d.detailType));
  if (!ok) {
    throw new OptionsError(
      "publish: the destination is { kind: 'sqs', queueUrl }, { kind: 'sns', topicArn } or " +
        "{ kind: 'eventbridge', eventBusName, source, detailType }",
    );
  }
}

function isText(v: unknown): v is string {
  return typeof v === "string" && v.length > 0;
}

/** The message as sent: a string as is, anything else as JSON; EventBridge's must be a JSON object (its detail). */
function bodyOf(destination: Destination, message: unknown): string {
  let body: string | undefined;
  try {
    body = typeof message === "string" ? message : JSON.stringify(message);
  } catch (cause) {
    throw new OptionsError("publish: the message is not serializable as JSON", { cause });
  }
  if (body === undefined) throw new OptionsError("publish: the message is undefined (or a function)");
  if (destination.kind === "eventbridge" && !isJsonObject(body)) {
    throw new OptionsError("publish: an EventBridge message is a JSON object (the event's detail)");
  }
  return body;
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

const ATTRIBUTE_NAME = /^[A-Za-z0-9_.-]{1,256}$/;

function checkAttributes(attributes: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const entries = Object.entries(attributes ?? {});
  if (entries.length > MAX_OUTBOX_ATTRIBUTES) {
    throw new OptionsError(
      `publish: ${entries.length} attributes; SQS and SNS take ${MAX_OUTBOX_ATTRIBUTES} besides ${OUTBOX_MESSAGE_ID_ATTRIBUTE}`,
    );
  }
  for (const [k, v] of entries) {
    if (!ATTRIBUTE_NAME.test(k) || typeof v !== "string" || k === OUTBOX_MESSAGE_ID_ATTRIBUTE) {
      throw new OptionsError(
        `publish: attribute ${JSON.stringify(k)} is not a name SQS and SNS take with a string value`,
      );
    }
  }
  return { ...attributes };
}
