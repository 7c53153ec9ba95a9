import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { LambdaHandler } from "../../local/delivery/lambda-runner.js";
import { installLine } from "../../local/emulators/requirements.js";

const TYPESCRIPT = /\.(ts|mts|cts|tsx)$/;

/** True for a handler module that Node cannot import without a TypeScript loader (`eonce run` needs tsx). */
export function isTypeScriptHandler(spec: string): boolean {
  return TYPESCRIPT.test(splitSpec(spec).file);
}

function splitSpec(spec: string): { file: string; name: string } {
  // A Windows drive letter (`C:\…`) is not an export separator.
  const colon = spec.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !/^[A-Za-z]:[\\/]/.test(spec));
  return {
    file: hasExport ? spec.slice(0, colon) : spec,
    name: hasExport ? spec.slice(colon + 1) : "handler",
  };
}

let tsxRegistered: Promise<Error | undefined> | undefined;

/**
 * Registers tsx's ESM loader in this process (once), for TypeScript handlers run from the installed package.
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
        `TypeScript handlers need tsx, which is not installed: run \`${installLine(["tsx"])}\` ` +
          "(or point eonce run at compiled JavaScript)",
        { cause },
      );
    }
  })();
  return tsxRegistered;
}

async function importModule(path: string): Promise<Record<string, unknown>> {
  const missingTsx = TYPESCRIPT.test(path) ? await registerTsx() : undefined;
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    if (missingTsx && (error as { code?: string }).code === "ERR_UNKNOWN_FILE_EXTENSION") throw missingTsx;
    throw error;
  }
}

/**
 * Loads a handler given like a Lambda handler setting, `path:export` (`examples/records/lambda.ts:handler`;
 * the export defaults to `handler`). Import it after the environment is set: modules read it at load.
 * TypeScript modules run through tsx: the one already in the process (`npm run eonce`), or tsx's loader
 * registered on demand (the installed `eonce`, tsx an optional peer dependency).
 */
export async function loadHandler(
  spec: string,
  cwd = process.cwd(),
): Promise<{ path: string; name: string; handler: LambdaHandler }> {
  const { file, name } = splitSpec(spec);
  if (!file || !name) throw new Error(`expected <path>:<export>, got ${JSON.stringify(spec)}`);
  const path = isAbsolute(file) ? file : resolve(cwd, file);
  if (!existsSync(path)) throw new Error(`handler module not found: ${path}`);
  const mod = await importModule(path);
  const handler =
    mod[name] ??
    (name === "handler" ? (mod.default as Record<string, unknown> | undefined)?.handler : undefined);
  if (typeof handler !== "function") {
    const exported = Object.keys(mod).filter((k) => typeof mod[k] === "function");
    throw new Error(
      `${file} has no function export ${JSON.stringify(name)} (function exports: ${exported.join(", ") || "none"})`,
    );
  }
  return { path, name, handler: handler as LambdaHandler };
}
