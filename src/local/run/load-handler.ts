import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { LambdaHandler } from "../lambda-runner.js";

/**
 * Loads a handler given like a Lambda handler setting, `path:export` (`examples/records/lambda.ts:handler`;
 * the export defaults to `handler`). Import it after the environment is set: modules read it at load.
 * TypeScript modules need a TS loader in the process (the `eonce` script runs under tsx).
 */
export async function loadHandler(
  spec: string,
  cwd = process.cwd(),
): Promise<{ path: string; name: string; handler: LambdaHandler }> {
  // A Windows drive letter (`C:\…`) is not an export separator.
  const colon = spec.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !/^[A-Za-z]:[\\/]/.test(spec));
  const file = hasExport ? spec.slice(0, colon) : spec;
  const name = hasExport ? spec.slice(colon + 1) : "handler";
  if (!file || !name) throw new Error(`expected <path>:<export>, got ${JSON.stringify(spec)}`);
  const path = isAbsolute(file) ? file : resolve(cwd, file);
  if (!existsSync(path)) throw new Error(`handler module not found: ${path}`);
  const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
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
