import type { StateRecord, StateStatus } from "../../core/state.js";

/**
 * The fields of a state hash (docs/valkey.md), by StateRecord field. Short names: every state hash carries them, and
 * the scripts (lua.ts) use the same.
 */
export const FIELDS = {
  status: "status",
  position: "pos",
  identity: "id",
  fence: "fence",
  token: "token",
  leaseUntilMs: "lease",
  committedPosition: "cpos",
  committedIdentity: "cid",
  result: "result",
  resultOmittedBytes: "omitted",
  committedFingerprint: "cfp",
  expiresAtSeconds: "exp",
  attempts: "att",
} as const satisfies Record<Exclude<keyof StateRecord, "key">, string>;

type Field = keyof typeof FIELDS;

const NUMERIC = new Set<Field>([
  "fence",
  "attempts",
  "leaseUntilMs",
  "resultOmittedBytes",
  "expiresAtSeconds",
]);
const OPTIONAL = (Object.keys(FIELDS) as Field[]).filter(
  (f) => !["status", "position", "identity", "fence", "attempts"].includes(f),
);

/** Every field but the result: what `list` reads. */
export const LISTED_FIELDS: readonly string[] = Object.values(FIELDS).filter((f) => f !== FIELDS.result);

/** A state hash (field → value) as the contract's record; undefined when the hash is absent (no fields). */
export function recordOf(key: string, hash: Readonly<Record<string, string>>): StateRecord | undefined {
  if (hash[FIELDS.status] === undefined) return undefined;
  const record: StateRecord = {
    key,
    status: hash[FIELDS.status] as StateStatus,
    position: hash[FIELDS.position] ?? "",
    identity: hash[FIELDS.identity] ?? "",
    fence: Number(hash[FIELDS.fence]),
    attempts: Number(hash[FIELDS.attempts] ?? 0),
  };
  for (const f of OPTIONAL) {
    const v = hash[FIELDS[f]];
    if (v !== undefined) Object.assign(record, { [f]: NUMERIC.has(f) ? Number(v) : v });
  }
  return record;
}

/** HGETALL's reply as a script returns it (field, value, …). */
export function hashOfFlat(flat: unknown): Record<string, string> {
  const hash: Record<string, string> = {};
  if (!Array.isArray(flat)) return hash;
  for (let i = 0; i + 1 < flat.length; i += 2) hash[String(flat[i])] = String(flat[i + 1]);
  return hash;
}

/** HMGET's reply for `fields` as a hash (absent fields left out). */
export function hashOfValues(
  fields: readonly string[],
  values: readonly (string | null)[],
): Record<string, string> {
  const hash: Record<string, string> = {};
  fields.forEach((f, i) => {
    const v = values[i];
    if (v !== null && v !== undefined) hash[f] = v;
  });
  return hash;
}
