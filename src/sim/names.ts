import { stateKey } from "../core/state-key.js";
import type { Chooser } from "./chooser.js";

/**
 * Text that looks like part of a state key's encoding (`o#<subject>`, `u#<len>#<subject><identity>`, the inline
 * row's `u#o#`), or that stores and sources treat specially (separators, escapes, non-ASCII). Subjects come from
 * senders (an order id, a body field), so the simulator spells them like this to find any mapping that is not
 * one-to-one. No NUL and no lone surrogate: PostgreSQL text and DynamoDB strings refuse them before any mapping.
 */
export const KEY_PIECES = [
  "o#",
  "u#",
  "u#o#",
  "o#u#",
  "#",
  "u#0#",
  "u#12#",
  "0",
  "/",
  " ",
  "+",
  "%2F",
  ".",
  "é",
  "日本",
  "🙂",
] as const;

/** The names of a history's events: ordered subjects (one per subject) and dedupe-only events. */
export interface SimNames {
  ordered: string[];
  dedupe: { subject: string; identity: string }[];
}

/** Long subjects stay well inside the state key limit, with room for an identity and a namespace. */
const MAX_LONG_EXTRA = 1500;

/**
 * Subjects and identities, each plain or (drawn per name) adversarial: a key piece before or after, long, empty,
 * a dedupe pair whose subject and identity concatenate like another's, and an ordered subject spelled exactly like
 * a dedupe event's state key. Every name carries the namespace `ns` (histories on a server share its tables), and
 * names are distinct. Exhaustive runs draw no names (`int` gives its minimum there): they keep the plain ones.
 */
export function simNames(cfg: { subjects: number; dedupeEvents: number }, ns: string, c: Chooser): SimNames {
  const used = new Set<string>();
  const fresh = (name: string, plain: string) => (used.has(name) ? plain : name);
  const piece = () => KEY_PIECES[c.int(0, KEY_PIECES.length - 1)] as string;
  // A dedupe subject may be empty (outside a namespace): it keys no sink row, only its events' state keys.
  const base = spell(c.int(0, 3), `${ns}d`, piece, { empty: ns === "" });
  const dedupe: SimNames["dedupe"] = [];
  for (let i = 0; i < cfg.dedupeEvents; i++) {
    // `<base>m` + `1` reads as `<base>` + `m1` once concatenated: only the length prefix tells them apart.
    const pair =
      c.int(0, 1) === 1 ? { subject: `${base}m`, identity: `${i}` } : { subject: base, identity: `m${i}` };
    dedupe.push(pair);
    used.add(pair.subject);
  }
  const ordered: string[] = [];
  for (let i = 0; i < cfg.subjects; i++) {
    const plain = `${ns}s${i}`;
    const kind = c.int(0, 5);
    const twin = dedupe[i % Math.max(1, dedupe.length)];
    // Never empty: an ordered subject keys its sink row, and sinks refuse an empty key (as DynamoDB does).
    const name =
      kind === 5 && twin
        ? stateKey(twin.subject, twin.identity, false)
        : spell(kind, plain, piece, { long: c });
    ordered.push(fresh(name, plain));
    used.add(ordered[i] as string);
  }
  return { ordered, dedupe };
}

/** One name by kind: 0 plain, 1 a piece before, 2 a piece after, 3 empty (where allowed) or long, 4 long. */
function spell(
  kind: number,
  plain: string,
  piece: () => string,
  o: { empty?: boolean; long?: Chooser },
): string {
  if (kind === 1) return `${piece()}${plain}`;
  if (kind === 2) return `${plain}${piece()}`;
  if (kind === 3 && o.empty) return "";
  if ((kind === 3 || kind === 4) && o.long) return `${plain}${"x".repeat(o.long.int(200, MAX_LONG_EXTRA))}`;
  return plain;
}
