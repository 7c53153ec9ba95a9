import { spawnSync } from "node:child_process";
import { dirname, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** One kind of error the handler hit, with how often: the first few go in the report. */
export interface ErrorSummary {
  /** `Name: message` (first line). */
  error: string;
  /** First stack frame in the user's code (`path:line:col`), if any. */
  at?: string;
  count: number;
}

// This package's own code (src/ or dist/ in the repository or in node_modules) is not "the user's".
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const OWN = [`${PACKAGE_ROOT}${sep}src${sep}`, `${PACKAGE_ROOT}${sep}dist${sep}`];

/** The first stack frame outside node internals, node_modules and this package, relative to `cwd`. */
export function userFrame(error: unknown, cwd = process.cwd()): string | undefined {
  const stack = error instanceof Error ? error.stack : undefined;
  if (!stack) return undefined;
  for (const line of stack.split("\n").slice(1)) {
    const m = /\(?((?:file:\/\/)?[^()\s]+?):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const file = m[1]?.startsWith("file://") ? fileURLToPath(m[1]) : (m[1] ?? "");
    if (!file || file.startsWith("node:") || file.includes(`${sep}node_modules${sep}`)) continue;
    if (OWN.some((own) => file.startsWith(own))) continue;
    return `${relative(cwd, file) || file}:${m[2]}:${m[3]}`;
  }
  return undefined;
}

export function firstLine(error: unknown): string {
  const text =
    error instanceof Error
      ? `${error.name}: ${error.message}`
      : typeof error === "string"
        ? error
        : String(error);
  return text.split("\n")[0] ?? text;
}

/** Groups errors by message and place; the most frequent first, at most `limit`. */
export function summarizeErrors(errors: readonly unknown[], limit = 5): ErrorSummary[] {
  const byKey = new Map<string, ErrorSummary>();
  for (const e of errors) {
    const error = firstLine(e);
    const at = userFrame(e);
    const key = `${error}\n${at ?? ""}`;
    const s = byKey.get(key);
    if (s) s.count++;
    else byKey.set(key, { error, ...(at ? { at } : {}), count: 1 });
  }
  return [...byKey.values()].sort((a, b) => b.count - a.count).slice(0, limit);
}

/**
 * A one-line reason a handler module failed to load, naming the file and line when the error has them:
 * Node's own SyntaxError does not say where it is, so the import is repeated in a child process, whose
 * uncaught-error output starts with `file:line`.
 */
export function describeLoadError(error: unknown, path: string): string {
  return `${locateLoadError(error, path)}${moduleTypeHint(error)}`;
}

/**
 * Node's errors when ES module code (top-level await, `import`) is loaded as CommonJS: a project without
 * `"type": "module"` (as `npm init -y` makes it). The message alone does not say what to change.
 */
const COMMONJS_PROJECT =
  /ERR_REQUIRE_ASYNC_MODULE|ERR_REQUIRE_CYCLE_MODULE|require\(\) (of )?ES Module|in a cycle|Cannot use import statement outside a module|top-level await/i;

/** What to change when the handler's ES module code was loaded as CommonJS; nothing otherwise. */
export function moduleTypeHint(error: unknown): string {
  const text =
    error instanceof Error ? `${(error as { code?: unknown }).code ?? ""} ${error.message}` : String(error);
  return COMMONJS_PROJECT.test(text)
    ? `; the handler is ES module code loaded as CommonJS: add "type": "module" to your package.json (docs/install.md)`
    : "";
}

function locateLoadError(error: unknown, path: string): string {
  const first = firstLine(error);
  // tsx/esbuild: "Transform failed with 1 error:\n/path/file.ts:2:12: ERROR: Unexpected ..."
  const esbuild = error instanceof Error ? /\n(\S+:\d+:\d+): ERROR: (.*)/.exec(error.message) : null;
  if (esbuild) return `cannot load ${rel(esbuild[1] ?? path)}: SyntaxError: ${esbuild[2]}`;
  const at = userFrame(error);
  if (!(error instanceof SyntaxError) || at)
    return `cannot load ${rel(path)}: ${first}${at ? ` (at ${at})` : ""}`;
  const child = spawnSync(
    process.execPath,
    [
      ...process.execArgv,
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(pathToFileURL(path).href)})`,
    ],
    { encoding: "utf8", timeout: 15_000 },
  );
  const where = /^(file:\/\/\S+|\/\S+):(\d+)$/m.exec(child.stderr ?? "");
  const file = where?.[1]?.startsWith("file://") ? fileURLToPath(where[1]) : where?.[1];
  return `cannot load ${rel(path)}: ${first}${file ? ` (at ${rel(file)}:${where?.[2]})` : ""}`;
}

function rel(file: string): string {
  return relative(process.cwd(), file) || file;
}
