/**
 * Renders untrusted values for error messages. Messages end up in logs and DLQ attributes, so each rendering
 * is one line, at most about MAX_ECHO characters, and never throws: not on deep nesting (JSON.stringify
 * overflows the stack at a few thousand levels), cycles, getters, proxies or values with no primitive
 * conversion (`{ toString: 1 }`, `Object.create(null)`).
 */

/** Characters of a value echoed into a message before it is cut. */
export const MAX_ECHO = 100;

/** Levels of an object or array shown; deeper ones print as `{…}` / `[…]`. Bounds the recursion. */
const MAX_DEPTH = 3;

/** C0/C1 controls, line/paragraph separators and lone surrogates: escaped so a message stays one line. */
const UNSAFE = /[\p{Cc}\u2028\u2029\p{Cs}]/u;

/** A value as a short, JSON-like, one-line string: `"abc"`, `42`, `{"a":[1,2]}`, `"0055…" (200000 characters)`. */
export function describeValue(value: unknown): string {
  try {
    if (typeof value === "string") return quoted(value);
    const text = render(value, 0, { left: MAX_ECHO });
    return text.length > MAX_ECHO ? `${cutAt(text, MAX_ECHO)}…` : text;
  } catch {
    // A proxy trap or exotic object threw: say what it is without touching it again.
    return kind(value);
  }
}

/**
 * Free text from elsewhere (a parser's error message, a handler's error) as one capped line: controls are
 * escaped, quotes are not. JSON.parse messages quote the input, newlines included.
 */
export function describeText(text: string, max = MAX_ECHO * 2): string {
  return clipText(text, max);
}

/** The message of a thrown value, one line and capped; non-Errors are described, never `String()`-ed. */
export function describeError(error: unknown): string {
  try {
    if (error instanceof Error && typeof error.message === "string") return describeText(error.message);
  } catch {
    // A getter on the error threw; fall through to a description.
  }
  return describeValue(error);
}

/** `"abc"`, or `"abc…" (200000 characters)` when cut. */
function quoted(text: string, max = MAX_ECHO): string {
  const { head, cut } = clip(text, max, true);
  return cut ? `"${head}…" (${text.length} characters)` : `"${head}"`;
}

/** Cuts at a code point boundary and names the original length when it cuts. */
function clipText(text: string, max: number): string {
  const { head, cut } = clip(text, max, false);
  return cut ? `${head}… (${text.length} characters)` : head;
}

/** The longest prefix whose escaped form fits in `max`; `json` also escapes `"` and `\\` as JSON does. */
function clip(text: string, max: number, json: boolean): { head: string; cut: boolean } {
  let head = "";
  let i = 0;
  while (i < text.length) {
    const ch = String.fromCodePoint(text.codePointAt(i) as number);
    const piece = UNSAFE.test(ch) ? escapeChar(ch) : json ? JSON.stringify(ch).slice(1, -1) : ch;
    if (head.length + piece.length > max) break;
    head += piece;
    i += ch.length;
  }
  return { head, cut: i < text.length };
}

/** `\n`, `\u0085`, `\u2028`, `\ud800`: JSON's escape when it has one (it leaves U+2028 as is). */
function escapeChar(ch: string): string {
  const json = JSON.stringify(ch).slice(1, -1);
  return json !== ch ? json : `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

interface Budget {
  left: number;
}

/** Stops adding elements once the budget is spent; the caller cuts what overshoots. */
function render(value: unknown, depth: number, budget: Budget): string {
  const text = renderUnspent(value, depth, budget);
  budget.left -= text.length;
  return text;
}

function renderUnspent(value: unknown, depth: number, budget: Budget): string {
  if (value === null || value === undefined || typeof value === "boolean") return String(value);
  if (typeof value === "number") return String(value);
  if (typeof value === "bigint") return clipText(`${value.toString()}n`, MAX_ECHO);
  if (typeof value === "string") return quoted(value, MAX_ECHO / 2);
  if (typeof value !== "object") return kind(value);
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return value.length === 0 ? "[]" : "[…]";
    const items: string[] = [];
    for (let i = 0; i < value.length; i++) {
      if (budget.left <= 0) return `[${items.join(",")},…]`;
      items.push(renderProperty(value, String(i), depth, budget));
    }
    return `[${items.join(",")}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return kind(value);
  if (depth >= MAX_DEPTH) return "{…}";
  const entries: string[] = [];
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (budget.left <= 0) return `{${entries.join(",")},…}`;
    entries.push(`${quoted(key, MAX_ECHO / 2)}:${renderProperty(value, key, depth, budget)}`);
  }
  return `{${entries.join(",")}}`;
}

/** Reads a data property only: a getter is untrusted code. */
function renderProperty(obj: object, key: string, depth: number, budget: Budget): string {
  const descriptor = Object.getOwnPropertyDescriptor(obj, key);
  if (descriptor !== undefined && !("value" in descriptor)) return "[getter]";
  return render(descriptor?.value, depth + 1, budget);
}

/** Never ends in half a surrogate pair. */
function cutAt(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/** What a value is, from `typeof` alone (it cannot throw or run code; Array.isArray throws on revoked proxies). */
function kind(value: unknown): string {
  if (value === null) return "null";
  const type = typeof value;
  return type === "object" || type === "undefined" ? `an ${type}` : `a ${type}`;
}
