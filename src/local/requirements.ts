import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The local runtime's packages are optional peer dependencies of effectively-once: a Lambda deployment never
 * needs them (and must not carry a DynamoDB Local jar), so they are not installed with the library. `eonce run`
 * and `eonce demo` check them all up front, so that one install line fixes every missing one at once.
 */
export const LOCAL_PACKAGES = {
  s3rver: "s3rver",
  "amplify-dynamodb-simulator": "amplify-dynamodb-simulator",
  // fauxqs is patched at one internal path (sqs-server.ts): exactly this version.
  fauxqs: "fauxqs@1.9.2",
  tsx: "tsx",
  sharp: "sharp",
} as const;

export type LocalPackage = keyof typeof LOCAL_PACKAGES;

/** What a command needs: the servers, plus tsx for TypeScript handlers and sharp for the images scenario. */
export function localPackagesFor(options: {
  dynamodbEndpoint?: string | undefined;
  typescript?: boolean;
  images?: boolean;
}): LocalPackage[] {
  return [
    "s3rver",
    ...(options.dynamodbEndpoint ? [] : (["amplify-dynamodb-simulator"] as const)),
    "fauxqs",
    ...(options.typescript ? (["tsx"] as const) : []),
    ...(options.images ? (["sharp"] as const) : []),
  ];
}

/** The one `npm i -D …` line that installs the given packages (fauxqs pinned: npm would save ^1.9.2). */
export function installLine(packages: readonly LocalPackage[]): string {
  const specs = packages.map((p) => LOCAL_PACKAGES[p]);
  const pinned = packages.includes("fauxqs") ? " --save-exact" : "";
  return `npm i -D${pinned} ${specs.join(" ")}`;
}

/**
 * Throws one error naming every missing or wrong package and the single install line for all of them.
 * `from` is where they are resolved from (this module: the installed effectively-once sees the project's
 * node_modules as npm lays them out).
 */
export function requireLocalPackages(
  packages: readonly LocalPackage[],
  from: string = import.meta.url,
): void {
  const problems: string[] = [];
  const fix: LocalPackage[] = [];
  for (const name of packages) {
    const version = installedVersion(name, dirname(fileURLToPath(from)));
    if (version === undefined) {
      problems.push(`${name} is not installed`);
      fix.push(name);
    } else if (name === "fauxqs" && version !== "1.9.2") {
      problems.push(`fauxqs ${version} is installed, the local SQS server needs exactly 1.9.2`);
      fix.push(name);
    }
  }
  if (problems.length > 0) {
    throw new Error(
      `the local runtime needs more packages (${problems.join("; ")}): run \`${installLine(fix)}\``,
    );
  }
}

/** The version in `node_modules/<name>/package.json` as Node would find it from `dir` (exports maps aside). */
function installedVersion(name: string, dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    try {
      const pkg = JSON.parse(readFileSync(join(d, "node_modules", name, "package.json"), "utf8")) as {
        version?: string;
      };
      return pkg.version ?? "unknown";
    } catch {
      // not here
    }
    if (dirname(d) === d) return undefined;
  }
}
