import { isAbsolute, resolve } from "node:path";
import type { AnyLambdaHandler } from "../../local/delivery/local-function.js";
import { isTypeScriptModule, loadExport, splitExportSpec } from "../load-export.js";

/** True for a handler module that Node cannot import without a TypeScript loader (`eonce run` needs tsx). */
export function isTypeScriptHandler(spec: string): boolean {
  return isTypeScriptModule(splitExportSpec(spec, "handler").file);
}

/** The module path of a `path:export` spec (as loadHandler reads it), to name it in load errors. */
export function handlerPath(spec: string): string {
  const { file } = splitExportSpec(spec, "handler");
  return isAbsolute(file) ? file : resolve(file);
}

/**
 * Loads a handler given like a Lambda handler setting, `path:export` (`examples/records/lambda.ts:handler`;
 * the export defaults to `handler`). Import it after the environment is set: modules read it at load.
 * TypeScript modules run through tsx (src/cli/load-export.ts).
 */
export async function loadHandler(
  spec: string,
  cwd = process.cwd(),
): Promise<{ path: string; name: string; handler: AnyLambdaHandler }> {
  const { path, name, fn } = await loadExport(spec, { defaultName: "handler", what: "handler", cwd });
  return { path, name, handler: fn as unknown as AnyLambdaHandler };
}
