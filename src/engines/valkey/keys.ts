import { OptionsError } from "../../core/errors.js";

/**
 * The key layout (docs/valkey.md). A state key lives in one hash, `<prefix>{<escaped state key>}`: the braces are a
 * Redis Cluster hash tag, so the slot is the state key's alone, and a sink target that carries the same tag
 * (`valkeyHashTag`) is in the same slot, which one script may touch (Redis Cluster, ElastiCache cluster mode).
 * Escaping keeps a state key's own braces from ending the tag early, one-to-one so that `list` can map keys back.
 */

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

/** The state key of a state hash's name, or undefined for a key that is not one (`list` skips it). */
export function stateKeyOfRedisKey(prefix: string, redisKey: string): string | undefined {
  if (!redisKey.startsWith(`${prefix}{`) || !redisKey.endsWith("}")) return undefined;
  const tag = redisKey.slice(prefix.length + 1, -1);
  return tag.includes("}") ? undefined : unescapeTag(tag);
}

/** The SCAN pattern of the state hashes (the prefix holds no glob characters: KEY_PREFIX_PATTERN). */
export function stateKeyPattern(prefix: string): string {
  return `${prefix}{*`;
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
 * (`stampRedisKey`), and one script may only touch keys of one slot.
 */
export function requireHashTag(what: string, key: unknown): string {
  if (typeof key !== "string" || key.length === 0)
    throw new OptionsError(`${what}: a key must be a non-empty string`);
  const tag = hashTagOf(key);
  if (tag === undefined)
    throw new OptionsError(
      `${what}: the key ${JSON.stringify(key.slice(0, 80))} has no hash tag: put one in it, e.g. valkeyHashTag(ctx.stateKey), so that it and its fencing stamp share a slot`,
    );
  return tag;
}

/** The hash that keeps the fencing stamps (position, fence) of every sink target tagged `{tag}`. */
export function stampRedisKey(prefix: string, tag: string): string {
  return `${prefix}w:{${tag}}`;
}

/**
 * The stamp's field for a target: the key, or the key and a hash field or sorted-set member. The length prefix
 * makes it one-to-one (a key with `|` in it cannot pose as another key's member).
 */
export function stampField(key: string, member?: string): string {
  return member === undefined ? `${key.length}|${key}` : `${key.length}|${key}|${member}`;
}

/** A key prefix: printable ASCII without braces (they would make a hash tag) or SCAN's glob characters. */
export const KEY_PREFIX_PATTERN = /^(?:(?![{}*?[\]\\])[\x21-\x7E]){1,64}$/;
