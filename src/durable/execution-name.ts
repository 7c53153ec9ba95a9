import { createHash } from "node:crypto";
import { requireKeyText } from "../core/key-text.js";

/** What Lambda accepts as a `DurableExecutionName`: 1–64 characters of `[a-zA-Z0-9-_]`. */
export const DURABLE_EXECUTION_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The readable head of a name: the subject's allowed characters, cut short so the digest always fits. */
const HEAD_CHARS = 20;

/**
 * The durable execution name of one event: a readable head from the subject, `_`, then the SHA-256 (base64url, the
 * name's own alphabet) of the length-prefixed subject and identity. Deterministic, so every delivery of the event
 * names the same execution; one-to-one up to SHA-256 collisions (the length prefix keeps `ab`+`c` apart from
 * `a`+`bc`); at most 64 characters whatever the subject's length or alphabet. One-to-one because the text hashed
 * is the key rule's (src/core/key-text.ts: UTF-8 of a lone surrogate would be U+FFFD's): a `MalformedKeyError`
 * otherwise.
 */
export function durableExecutionName(subject: string, identity: string): string {
  requireKeyText("subject", subject);
  requireKeyText("identity", identity);
  const digest = createHash("sha256")
    .update(`${subject.length}:${subject}${identity}`, "utf8")
    .digest("base64url");
  const head = subject.replace(/[^A-Za-z0-9-]+/g, "-").slice(-HEAD_CHARS);
  return `${head}_${digest}`;
}
