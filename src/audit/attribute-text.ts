import type { AttributeValue } from "@aws-sdk/client-dynamodb";

/**
 * Attribute values as short strings, for the audit's tallies: a string per distinct value is all it keeps of a row,
 * so the text is compact (the value with a one-letter type prefix: `S`, `N`, `B` base64, `J` JSON for the rest)
 * and keeps DynamoDB's equality: "1" (S) and 1 (N) differ, as they do in a table.
 */
export function attributeText(value: AttributeValue): string {
  if (value.S !== undefined) return `S${value.S}`;
  if (value.N !== undefined) return `N${value.N}`;
  if (value.B !== undefined) return `B${Buffer.from(value.B).toString("base64")}`;
  return `J${JSON.stringify(value)}`;
}

/**
 * The value an attribute text stands for, for reports: a string, a number (a string when a JS number would not
 * hold it exactly), a base64 string for a binary, or the raw attribute value for the other types.
 */
export function attributeValueOf(text: string): unknown {
  const body = text.slice(1);
  switch (text[0]) {
    case "S":
    case "B":
      return body;
    case "N": {
      const n = Number(body);
      return Number.isFinite(n) && String(n) === body ? n : body;
    }
    default:
      return JSON.parse(body);
  }
}

/** Two texts as one, unambiguously (a length prefix: a value may contain any character). */
export function pairText(a: string, b: string): string {
  return `${a.length}:${a}${b}`;
}

/** The two texts of `pairText`. */
export function unpairText(text: string): [string, string] {
  const colon = text.indexOf(":");
  const length = Number(text.slice(0, colon));
  return [text.slice(colon + 1, colon + 1 + length), text.slice(colon + 1 + length)];
}

/**
 * A SQL value as an attribute text, so SQL rows share the DynamoDB tally and report: numbers (and bigints) `N`,
 * strings `S`, bytes `B` base64; undefined for NULL (the column is absent, as a missing attribute). Integer 1 and
 * real 1.0 give one text, as they compare equal in SQLite.
 */
export function sqlValueText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "number" || typeof value === "bigint") return `N${String(value)}`;
  if (typeof value === "string") return `S${value}`;
  if (value instanceof Uint8Array) return `B${Buffer.from(value).toString("base64")}`;
  return `J${JSON.stringify(value)}`;
}
