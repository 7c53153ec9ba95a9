import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { installLine } from "../local/emulators/requirements.js";

const TYPESCRIPT = /\.(ts|mts|cts|tsx)$/;

/** `path:export` → its parts; the export defaults to `defaultName`. A Windows drive letter is no separator. */
export function splitExportSpec(spec: string, defaultName: string): { file: string; name: string } {
  const colon = spec.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !/^[A-Za-z]:[\\/]/.test(spec));
  return {
    file: hasExport ? spec.slice(0, colon) : spec,
    name: hasExport ? spec.slice(colon + 1) : defaultName,
  };
}

/** True for a module that Node cannot import without a TypeScript loader (tsx). */
export function isTypeScriptModule(file: string): boolean {
  return TYPESCRIPT.test(file);
}

let tsxRegistered: Promise<Error | undefined> | undefined;

/**
 * Registers tsx's ESM loader in this process (once), for TypeScript modules loaded from the installed package.
 * Registering is done before the import: Node does not retry a module whose first import failed. A second
 * registration under `npm run eonce` (already tsx) is harmless. Resolves to the error to report if tsx is missing.
 */
function registerTsx(): Promise<Error | undefined> {
  tsxRegistered ??= (async () => {
    try {
      const api = (await import("tsx/esm/api")) as { register(): unknown };
      api.register();
      return undefined;
    } catch (cause) {
      return new Error(
        `TypeScript modules need tsx, which is not installed: run \`${installLine(["tsx"])}\` ` +
          "(or point eonce at compiled JavaScript)",
        { cause },
      );
    }
  })();
  return tsxRegistered;
}

async function importModule(path: string): Promise<Record<string, unknown>> {
  const missingTsx = isTypeScriptModule(path) ? await registerTsx() : undefined;
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    if (missingTsx && (error as { code?: string }).code === "ERR_UNKNOWN_FILE_EXTENSION") throw missingTsx;
    throw error;
  }
}

export interface LoadedExport {
  /** The module's absolute path. */
  path: string;
  name: string;
  fn: (...args: never[]) => unknown;
}

export interface LoadExportOptions {
  /** The export when the spec names none (also looked up under `default`). */
  defaultName: string;
  /** What the function is, for messages: `handler`, `--row-key`. */
  what: string;
  /** Default the process's. */
  cwd?: string;
}

/**
 * Loads a function given as `path:export` (relative to `cwd`), like a Lambda handler setting: `eonce run`'s
 * handler, `eonce state`'s `--row-key`. Without `:export` the export is `defaultName`, or `default.<defaultName>`.
 * TypeScript modules run through tsx: the one already in the process (`npm run eonce`), or tsx's loader registered
 * on demand (the installed `eonce`, tsx an optional peer dependency).
 */
export async function loadExport(spec: string, options: LoadExportOptions): Promise<LoadedExport> {
  const { defaultName, what, cwd = process.cwd() } = options;
  const { file, name } = splitExportSpec(spec, defaultName);
  if (!file || !name) throw new Error(`expected <path>:<export>, got ${JSON.stringify(spec)}`);
  const path = isAbsolute(file) ? file : resolve(cwd, file);
  if (!existsSync(path)) throw new Error(`${what} module not found: ${path}`);
  const mod = await importModule(path);
  const fn =
    mod[name] ??
    (name === defaultName ? (mod.default as Record<string, unknown> | undefined)?.[name] : undefined);
  if (typeof fn !== "function") {
    const exported = Object.keys(mod).filter((k) => typeof mod[k] === "function");
    throw new Error(
      `${file} has no function export ${JSON.stringify(name)} (function exports: ${exported.join(", ") || "none"})`,
    );
  }
  return { path, name, fn: fn as LoadedExport["fn"] };
}
