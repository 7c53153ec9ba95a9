import { readFile, stat } from "node:fs/promises";
import { OptionsError } from "../../core/errors.js";
import { filesUnder } from "./files.js";

/**
 * One application message to replay: its body and, for SQS, its FIFO ids and message attributes; for Kinesis, its
 * partition key; for DynamoDB Streams, whether the item is written or deleted.
 */
export interface ReplayMessage {
  /** Where it came from (`file:line` or a file's relative path), for reports and errors. */
  label: string;
  body: string;
  groupId?: string;
  dedupId?: string;
  attributes?: Record<string, string | number>;
  /** Kinesis: the record's partition key (default: the message's label, a key of its own). */
  partitionKey?: string;
  /** DynamoDB Streams: `put` (default) writes the body as the item, `delete` deletes the item of the body's `pk`. */
  op?: "put" | "delete";
}

const KEYS = ["body", "groupId", "dedupId", "attributes", "partitionKey", "op"];

/**
 * Messages from a JSONL file (one per line: a body as it is, or a `{body, groupId, dedupId, attributes}`
 * object; a non-string body is sent as its JSON) or a folder (each file's content is one body, files in
 * path order). Blank lines are skipped. Errors name the file and line.
 */
export async function readMessages(path: string): Promise<ReplayMessage[]> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new OptionsError(`--messages: no such file or folder: ${path}`);
  if (info.isDirectory()) return messagesFromFolder(path);
  const text = await readFile(path, "utf8");
  const out: ReplayMessage[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    out.push(parseLine(line, `${path}:${i + 1}`));
  });
  if (out.length === 0) throw new OptionsError(`--messages: ${path} holds no message`);
  return out;
}

function parseLine(line: string, label: string): ReplayMessage {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { label, body: line };
  }
  // Only an object with a `body` is an envelope; any other line (JSON or not) is a body as it is.
  if (typeof value !== "object" || value === null || Array.isArray(value) || !("body" in value)) {
    return { label, body: line };
  }
  const o = value as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !KEYS.includes(k));
  if (unknown.length > 0) {
    throw new OptionsError(`${label}: unknown key "${unknown[0]}" (allowed: ${KEYS.join(", ")})`);
  }
  const m: ReplayMessage = { label, body: typeof o.body === "string" ? o.body : JSON.stringify(o.body) };
  if (o.op !== undefined) {
    if (o.op !== "put" && o.op !== "delete") throw new OptionsError(`${label}: op must be "put" or "delete"`);
    m.op = o.op;
  }
  for (const key of ["groupId", "dedupId", "partitionKey"] as const) {
    const v = o[key];
    if (v === undefined) continue;
    if (typeof v !== "string" || v.length === 0)
      throw new OptionsError(`${label}: ${key} must be a non-empty string`);
    m[key] = v;
  }
  if (o.attributes !== undefined) {
    const a = o.attributes;
    if (typeof a !== "object" || a === null || Array.isArray(a)) {
      throw new OptionsError(`${label}: attributes must be an object of strings and numbers`);
    }
    for (const [k, v] of Object.entries(a)) {
      if (typeof v !== "string" && typeof v !== "number") {
        throw new OptionsError(`${label}: attribute "${k}" must be a string or a number`);
      }
    }
    m.attributes = a as Record<string, string | number>;
  }
  return m;
}

async function messagesFromFolder(folder: string): Promise<ReplayMessage[]> {
  const out: ReplayMessage[] = [];
  for (const file of await filesUnder(folder)) {
    out.push({ label: file.relative, body: await readFile(file.path, "utf8") });
  }
  if (out.length === 0) throw new OptionsError(`--messages: no files under ${folder}`);
  return out;
}

/** Eager checks against the queue kind: FIFO messages need a group, standard ones take no FIFO ids. */
export function checkMessagesFor(messages: ReplayMessage[], fifo: boolean, via: string): void {
  for (const m of messages) {
    if (fifo && !m.groupId)
      throw new OptionsError(`${m.label}: a FIFO queue needs a groupId on every message`);
    if (!fifo && (m.groupId || m.dedupId)) {
      throw new OptionsError(`${m.label}: groupId and dedupId need --fifo (a FIFO queue)`);
    }
    if ((via === "eventbridge" || via === "kinesis" || via === "dynamodb-streams") && m.attributes) {
      throw new OptionsError(`${m.label}: attributes are SQS/SNS message attributes; ${via} has none`);
    }
    if (m.partitionKey !== undefined && via !== "kinesis") {
      throw new OptionsError(`${m.label}: partitionKey is for --source kinesis`);
    }
    if (m.op !== undefined && via !== "dynamodb-streams") {
      throw new OptionsError(`${m.label}: op is for --source dynamodb-streams`);
    }
    if (via === "dynamodb-streams") streamItem(m);
  }
}

/**
 * The key `--effects <table>:<attribute>` matches a message's rows by: its body's field `attribute` (the body a JSON
 * object, the field a string or a number), as a handler copies it into each row it writes (an order's `orderId`).
 * Messages with the same key are one event to I1 (a producer's resend of one order). Throws naming the message.
 */
export function messageEffectKey(m: ReplayMessage, attribute: string): string {
  let body: unknown;
  try {
    body = JSON.parse(m.body);
  } catch {
    body = undefined;
  }
  const value =
    typeof body === "object" && body !== null && Object.hasOwn(body, attribute)
      ? (body as Record<string, unknown>)[attribute]
      : undefined;
  if (typeof value === "string" || typeof value === "number") return String(value);
  throw new OptionsError(
    `${m.label}: --effects matches rows to a message by its body's "${attribute}", and this body has no string ` +
      `or number "${attribute}"`,
  );
}

/** Each sent message's effect key, by its correlation id (`sent`: correlation id → label). */
export function effectKeys(
  sent: ReadonlyMap<string, string>,
  messages: readonly ReplayMessage[],
  attribute: string,
): Map<string, string> {
  const byLabel = new Map(messages.map((m) => [m.label, m]));
  const keys = new Map<string, string>();
  for (const [id, label] of sent) {
    const m = byLabel.get(label);
    if (m) keys.set(id, messageEffectKey(m, attribute));
  }
  return keys;
}

/** The message's body as a JSON object, checked before anything starts: an `OptionsError` `<label>: <mustBe>` if not. */
export function bodyObject(m: ReplayMessage, mustBe: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(m.body);
  } catch {
    value = undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new OptionsError(`${m.label}: ${mustBe}`);
  }
  return value as Record<string, unknown>;
}

/** A DynamoDB Streams message's item: its body, a JSON object with a non-empty string `pk` (the table's key). */
export function streamItem(m: ReplayMessage): Record<string, unknown> & { pk: string } {
  const item = bodyObject(m, "--source dynamodb-streams writes each body as an item: a JSON object");
  const pk = item.pk;
  if (typeof pk !== "string" || pk.length === 0) {
    throw new OptionsError(`${m.label}: the item needs a non-empty string "pk" (the table's key)`);
  }
  return item as Record<string, unknown> & { pk: string };
}
