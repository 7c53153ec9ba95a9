import { createHash } from "node:crypto";
import { OptionsError } from "./errors.js";
import { requireKeyText } from "./key-text.js";

/**
 * What an effect key is scoped to: one event under the guard (its subject and identity: what every delivery of the
 * event carries alike), or one step of a durable execution (`markerStep` of src/durable/step-keys.ts: the execution
 * name and the step's SDK operation id and name, or the step key you gave `apply`).
 */
export type EffectKeyScope =
  | { kind: "event"; subject: string; identity: string }
  | { kind: "step"; step: string }
  /** A message an event published through the outbox (src/outbox/message-id.ts): its ids never equal its keys. */
  | { kind: "message"; subject: string; identity: string };

/** What every effect key starts with: the library and the derivation's version (a new one would change every key). */
export const EFFECT_KEY_PREFIX = "eo1_";

/**
 * base64url characters of the SHA-256 kept: 240 bits, far from any collision, so that the whole key (44 characters)
 * fits the shortest limit payment APIs set on an idempotency key (45), and well within 64.
 */
const DIGEST_CHARS = 40;

/**
 * The idempotency key of effect `name` of one event or durable step: `eo1_` and 40 base64url characters, a SHA-256
 * of the scope's fields and `name`, each length-prefixed (so `ab`+`c` and `a`+`bc` differ) after a tag of the scope's
 * kind (so an event's key never equals a step's). A pure function of what identifies the event or step, never of
 * the fence, attempt or clock: every retry, takeover, redelivery and replay of one event or step gets the same key,
 * which a provider that deduplicates by key (`Idempotency-Key`) turns into one effect. Header-, URL- and
 * file-name-safe. `name` tells two effects of one event apart: a `MalformedKeyError` when it breaks the key rule
 * (src/core/key-text.ts: its UTF-8, hashed here, would otherwise name two names alike), an `OptionsError` when empty.
 */
export function effectKey(scope: EffectKeyScope, name: string): string {
  if (typeof name !== "string" || name.length === 0) {
    throw new OptionsError("an effect key needs a non-empty name");
  }
  requireKeyText("effect name", name);
  const fields =
    scope.kind !== "step"
      ? [requireKeyText("subject", scope.subject), requireKeyText("identity", scope.identity)]
      : [requireKeyText("step name", scope.step)];
  const text = [scope.kind, ...fields, name].map((f) => `${f.length}:${f}`).join("");
  const digest = createHash("sha256").update(text, "utf8").digest("base64url");
  return `${EFFECT_KEY_PREFIX}${digest.slice(0, DIGEST_CHARS)}`;
}
