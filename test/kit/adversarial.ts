import fc from "fast-check";
import { KEY_PIECES } from "../../src/sim/names.js";

/**
 * Text for key-mapping property tests: any string (lone surrogates included, unless `storable`: DynamoDB and
 * PostgreSQL refuse those and NUL), the simulator's pieces that look like key encodings run together, and strings
 * spelled like an unordered state key (`u#<len>#…`, with a right or a wrong length).
 */
export function adversarialText(o: { storable?: boolean } = {}): fc.Arbitrary<string> {
  const any = o.storable
    ? fc.string({ unit: "grapheme", maxLength: 24 }).map((s) => s.replaceAll("\u0000", ""))
    : fc.string({ unit: "binary", maxLength: 24 });
  const pieces = fc
    .array(fc.constantFrom(...KEY_PIECES, "a", "b", "1"), { maxLength: 6 })
    .map((a) => a.join(""));
  const lookalike = fc
    .tuple(pieces, pieces, fc.nat({ max: 12 }))
    .map(([s, rest, n]) => `u#${n % 3 === 0 ? n : s.length}#${s}${rest}`);
  return fc.oneof(any, pieces, lookalike, fc.constant(""));
}
