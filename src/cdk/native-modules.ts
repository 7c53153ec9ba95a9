import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { OptionsError } from "../core/errors.js";
import type { Architecture } from "./props.js";

/**
 * Packages with native code (e.g. sharp) cannot be bundled by esbuild. CDK's `nodeModules` option runs
 * `npm install` into the bundle, which needs the network and installs the *host's* binaries. Instead we
 * copy the installed packages from the project's node_modules (offline, the locked versions) and check
 * that the platform-specific ones (`os`/`cpu`/`libc` in their package.json) suit Lambda: Linux, glibc,
 * the function's architecture.
 */

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

const CPU: Record<Architecture, string> = { arm64: "arm64", x86_64: "x64" };

function readManifest(dir: string): Manifest | undefined {
  const file = path.join(dir, "package.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Manifest) : undefined;
}

/** Whether a package's platform fields (if any) allow Lambda on `architecture`. */
function suitsLambda(m: Manifest, architecture: Architecture): boolean {
  // npm's semantics: a list of allowed values, or of excluded ones (`!value`).
  const allows = (list: string[] | undefined, value: string) => {
    if (!list || list.length === 0) return true;
    if (list.includes(`!${value}`)) return false;
    const allowed = list.filter((v) => !v.startsWith("!"));
    return allowed.length === 0 || allowed.includes(value);
  };
  return allows(m.os, "linux") && allows(m.cpu, CPU[architecture]) && allows(m.libc, "glibc");
}

const isPlatformSpecific = (m: Manifest) => Boolean(m.os?.length || m.cpu?.length || m.libc?.length);

/**
 * The directories to copy for `modules`: each package and its installed dependency closure, minus
 * optional dependencies built for other platforms. Throws if a package ships per-platform binaries
 * but none installed suits Lambda.
 */
export function nativeModuleDirs(
  projectRoot: string,
  modules: string[],
  architecture: Architecture,
): string[] {
  const nodeModules = path.join(projectRoot, "node_modules");
  const dirs = new Map<string, string>();
  const visit = (name: string, optional: boolean, requiredBy: string) => {
    if (dirs.has(name)) return;
    const dir = path.join(nodeModules, name);
    const manifest = readManifest(dir);
    if (!manifest) {
      if (optional) return; // optional dependencies of other platforms are not installed
      throw new OptionsError(
        `EffectivelyOncePipeline: nativeModules: ${name} (needed by ${requiredBy}) is not installed in ${nodeModules}`,
      );
    }
    if (isPlatformSpecific(manifest) && !suitsLambda(manifest, architecture)) return;
    dirs.set(name, dir);
    for (const dep of Object.keys(manifest.dependencies ?? {})) visit(dep, false, name);
    const optionals = Object.keys(manifest.optionalDependencies ?? {});
    const installed = optionals.map((dep) => ({ dep, m: readManifest(path.join(nodeModules, dep)) }));
    const platformSpecific = installed.filter((x) => x.m && isPlatformSpecific(x.m));
    if (platformSpecific.length > 0 && !platformSpecific.some((x) => suitsLambda(x.m!, architecture))) {
      const cpu = CPU[architecture];
      throw new OptionsError(
        `EffectivelyOncePipeline: nativeModules: ${name} has no binaries installed for Lambda ` +
          `(linux, ${cpu}, glibc); installed: ${platformSpecific.map((x) => x.dep).join(", ")}. Install them ` +
          `(npm install --no-save --os=linux --cpu=${cpu} --libc=glibc ${name}) or set architecture to match ` +
          "the installed ones.",
      );
    }
    for (const dep of optionals) visit(dep, true, name);
  };
  for (const m of modules) visit(m, false, "nativeModules");
  return [...dirs.keys()].sort().map((name) => dirs.get(name)!);
}

/** Shell commands (run by CDK after esbuild) that copy `dirs` into the bundle's node_modules, portably. */
export function copyCommands(projectRoot: string, dirs: string[], outputDir: string): string[] {
  const nodeModules = path.join(projectRoot, "node_modules");
  return dirs.map((dir) => {
    const target = path.join(outputDir, "node_modules", path.relative(nodeModules, dir));
    const script = `require("fs").cpSync(${JSON.stringify(dir)}, ${JSON.stringify(target)}, { recursive: true, dereference: true })`;
    return `node -e ${shellQuote(script)}`;
  });
}

function shellQuote(s: string): string {
  return process.platform === "win32" ? `"${s.replace(/"/g, '\\"')}"` : `'${s.replace(/'/g, "'\\''")}'`;
}
