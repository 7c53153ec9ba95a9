import { OptionsError } from "../../core/errors.js";
import { requireKeyText } from "../../core/key-text.js";

/**
 * The key layout (docs/valkey.md). Every key the store writes is `<prefix>{<tag>}<role>`: a state key lives in one
 * hash, `<prefix>{<escaped state key>}` (role empty); the braces are a Redis Cluster hash tag, so the slot is the
 * state key's alone, and a sink target that carries the same tag (`valkeyHashTag`) is in the same slot, which one
 * script may touch (Redis Cluster, ElastiCache cluster mode). Escaping keeps a state key's own braces from ending the
 * tag early, one-to-one so that `list` can map keys back.
 *
 * Why the role comes after the tag: a prefix holds no brace, so a key's text before its first `{` is its prefix, and
 * two stores with different prefixes never share a key, whatever the prefixes (`eonce:` and `eonce:w:` included).
 * A role between the prefix and the tag (`<prefix>w:{…}`) would be another prefix's state hash.
 */

/** The roles after the tag: the sink's stamps, a durable execution fence, a step marker (`m<execution>#<step>`). */
export const STAMP_ROLE = "w";
export const FENCE_ROLE = "f";
export const MARKER_ROLE = "m";
/** The outbox (src/engines/valkey/outbox.ts): a tag's unsent entries, and their relays' leases. */
export const OUTBOX_ROLE = "o";
export const OUTBOX_LEASE_ROLE = "ol";
/**
 * The tag of the outbox's discovery hints. `escapeTag` writes every `%` as `%25`, so no state key's tag is a lone
 * `%`: the hint set is no state key's key.
 */
const OUTBOX_HINT_TAG = "%";

/** `%`, `{` and `}` as `%25`, `%7B`, `%7D`: the tag then holds no `}`, and the mapping is one-to-one. */
export function escapeTag(stateKey: string): string {
  return stateKey.replace(/[%{}]/g, (c) => (c === "%" ? "%25" : c === "{" ? "%7B" : "%7D"));
}

export function unescapeTag(tag: string): string {
  return tag.replace(/%(25|7B|7D)/g, (_, hex: string) => (hex === "25" ? "%" : hex === "7B" ? "{" : "}"));
}

/** The hash tag of a state key, braces included: put it in a sink key to keep the key in the state key's slot. */
export function valkeyHashTag(stateKey: string): string {
  return `{${escapeTag(stateKey)}}`;
}

/** The hash holding `stateKey`'s state. */
export function stateRedisKey(prefix: string, stateKey: string): string {
  return `${prefix}${valkeyHashTag(stateKey)}`;
}

/** The key of `role` for the hash tag `tag` (its content, without braces): `<prefix>{<tag>}<role>`. */
export function roleRedisKey(prefix: string, tag: string, role: string): string {
  return `${prefix}{${tag}}${role}`;
}

/** A durable execution fence of the state key's subject (`ValkeyStepEffects`). */
export function fenceRedisKey(prefix: string, stateKey: string): string {
  return roleRedisKey(prefix, escapeTag(stateKey), FENCE_ROLE);
}

/**
 * A guarded step's marker, in its execution's state key's slot (`ValkeyStepEffects`); `step` is the marker's step
 * text (`markerStep` of src/durable/step-keys.ts: the execution name and the step).
 */
export function markerRedisKey(prefix: string, stateKey: string, step: string): string {
  return roleRedisKey(prefix, escapeTag(stateKey), `${MARKER_ROLE}${step}`);
}

/** The sorted set of the unsent outbox entries committed under the tag `tag` (its content, without braces). */
export function outboxRedisKey(prefix: string, tag: string): string {
  return roleRedisKey(prefix, tag, OUTBOX_ROLE);
}

/** The hash of the relays' leases on the entries of `outboxRedisKey(prefix, tag)`. */
export function outboxLeaseRedisKey(prefix: string, tag: string): string {
  return roleRedisKey(prefix, tag, OUTBOX_LEASE_ROLE);
}

/** The set of tags that may have unsent outbox entries (a hint: outbox.ts). */
export function outboxHintRedisKey(prefix: string): string {
  return roleRedisKey(prefix, OUTBOX_HINT_TAG, "outbox");
}

/** The SCAN pattern that finds every outbox sorted set (and some other keys: `outboxTagOf` picks). */
export function outboxKeyPattern(prefix: string): string {
  return `${prefix}{*}${OUTBOX_ROLE}`;
}

/** The tag of `key` when it is an outbox sorted set of `prefix`, else undefined. */
export function outboxTagOf(prefix: string, key: string): string | undefined {
  const p = parseRedisKey(key);
  return p && p.prefix === prefix && p.role === OUTBOX_ROLE && p.tag !== OUTBOX_HINT_TAG ? p.tag : undefined;
}

/**
 * A key's parts: the prefix (its text before the first `{`), the hash tag's content (up to the next `}`) and the
 * role after it; undefined when the key has no such tag. Every key of the layout parses back to what made it, so
 * two different (prefix, tag, role) never share a key.
 */
export function parseRedisKey(key: string): { prefix: string; tag: string; role: string } | undefined {
  const open = key.indexOf("{");
  const close = open === -1 ? -1 : key.indexOf("}", open + 1);
  if (close === -1) return undefined;
  return { prefix: key.slice(0, open), tag: key.slice(open + 1, close), role: key.slice(close + 1) };
}

/** The state key of a state hash's name, or undefined for a key that is not one (`list` skips it). */
export function stateKeyOfRedisKey(prefix: string, redisKey: string): string | undefined {
  if (!redisKey.startsWith(`${prefix}{`) || !redisKey.endsWith("}")) return undefined;
  const tag = redisKey.slice(prefix.length + 1, -1);
  return tag.includes("}") ? undefined : unescapeTag(tag);
}

/** The SCAN pattern of the state hashes (the prefix holds no glob characters: KEY_PREFIX_PATTERN). */
export function stateKeyPattern(prefix: string): string {
  return `${prefix}{*}`;
}

/**
 * What Redis Cluster hashes for `key`: the content of its first `{…}` when non-empty, else undefined (the whole key
 * is hashed). Braces are ASCII, and UTF-8 never uses ASCII bytes inside a multi-byte character, so searching the
 * JavaScript string finds the bytes Redis finds.
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf("{");
  if (open === -1) return undefined;
  const close = key.indexOf("}", open + 1);
  return close === -1 || close === open + 1 ? undefined : key.slice(open + 1, close);
}

/**
 * A sink target's hash tag, required: the target's fencing stamp is kept in a hash of the same tag
 * (`stampRedisKey`), and one script may only touch keys of one slot. The key follows the key rule
 * (src/core/key-text.ts: ioredis sends UTF-8, a lone surrogate as U+FFFD) and is not one of the store's own keys
 * (its text before the first `{` is not `prefix`).
 */
export function requireHashTag(what: string, key: unknown, prefix: string): string {
  if (typeof key !== "string" || key.length === 0)
    throw new OptionsError(`${what}: a key must be a non-empty string`);
  requireKeyText("sink key", key);
  if (key.startsWith(`${prefix}{`))
    throw new OptionsError(
      `${what}: the key ${JSON.stringify(key.slice(0, 80))} is in the store's own key space (${prefix}{…}): give your keys another start`,
    );
  const tag = hashTagOf(key);
  if (tag === undefined)
    throw new OptionsError(
      `${what}: the key ${JSON.stringify(key.slice(0, 80))} has no hash tag: put one in it, e.g. valkeyHashTag(ctx.stateKey), so that it and its fencing stamp share a slot`,
    );
  return tag;
}

/** The hash that keeps the fencing stamps (position, fence) of every sink target tagged `{tag}`. */
export function stampRedisKey(prefix: string, tag: string): string {
  return roleRedisKey(prefix, tag, STAMP_ROLE);
}

/**
 * The stamp's field for a target: the key, or the key and a hash field or sorted-set member (which follows the key
 * rule as the key does: two members must not share a stamp). The length prefix makes it one-to-one (a key with `|`
 * in it cannot pose as another key's member).
 */
export function stampField(key: string, member?: string): string {
  if (member === undefined) return `${key.length}|${key}`;
  return `${key.length}|${key}|${requireKeyText("sink key", member)}`;
}

/**
 * A key prefix: printable ASCII without braces (the first `{` of a key ends its prefix, which keeps two prefixes' keys
 * apart) or SCAN's glob characters. Within the key rule (src/core/key-text.ts).
 */
export const KEY_PREFIX_PATTERN = /^(?:(?![{}*?[\]\\])[\x21-\x7E]){1,64}$/;
