import { accessSync, constants, readFileSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
import { missingJava } from "./dynamodb-local.js";

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
  // `eonce run --durable`: each started durable execution runs under its LocalDurableTestRunner.
  "@aws/durable-execution-sdk-js-testing": "@aws/durable-execution-sdk-js-testing",
  // Streams: `eonce run --source dynamodb-streams` and the demo's totals scenario read DynamoDB Local's streams;
  // `--source kinesis` runs kinesis-local (pinned: decision 0011) through the Kinesis client over HTTP/1.1.
  "@aws-sdk/client-dynamodb-streams": "@aws-sdk/client-dynamodb-streams",
  "kinesis-local": "kinesis-local@0.6.2",
  "@aws-sdk/client-kinesis": "@aws-sdk/client-kinesis",
  "@smithy/node-http-handler": "@smithy/node-http-handler",
} as const;

export type LocalPackage = keyof typeof LOCAL_PACKAGES;

/**
 * What a command needs: the servers, plus tsx for TypeScript handlers, sharp for the images scenario, the durable
 * execution testing package for `eonce run --durable`, and a stream's packages for a stream source (or the totals
 * scenario: a DynamoDB stream).
 */
export function localPackagesFor(options: {
  dynamodbEndpoint?: string | undefined;
  typescript?: boolean;
  images?: boolean;
  durable?: boolean;
  stream?: "kinesis" | "dynamodb-streams" | undefined;
}): LocalPackage[] {
  return [
    "s3rver",
    ...(options.dynamodbEndpoint ? [] : (["amplify-dynamodb-simulator"] as const)),
    "fauxqs",
    ...(options.typescript ? (["tsx"] as const) : []),
    ...(options.images ? (["sharp"] as const) : []),
    ...(options.durable ? (["@aws/durable-execution-sdk-js-testing"] as const) : []),
    ...(options.stream === "dynamodb-streams" ? (["@aws-sdk/client-dynamodb-streams"] as const) : []),
    ...(options.stream === "kinesis"
      ? (["kinesis-local", "@aws-sdk/client-kinesis", "@smithy/node-http-handler"] as const)
      : []),
  ];
}

/** The one `npm i -D …` line that installs the given packages (fauxqs pinned: npm would save ^1.9.2). */
export function installLine(packages: readonly LocalPackage[]): string {
  const specs = packages.map((p) => LOCAL_PACKAGES[p]);
  const pinned = packages.includes("fauxqs") || packages.includes("kinesis-local") ? " --save-exact" : "";
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

/**
 * Checks, in milliseconds and before anything starts, what starting the wanted servers needs: Java on the PATH for
 * DynamoDB Local (unless an endpoint is given), and the emulator packages. Throws a one-line Error naming what is
 * missing.
 */
export function requireServers(
  want: { dynamodb?: boolean; s3?: boolean; sqs?: boolean; kinesis?: boolean; dynamodbStreams?: boolean },
  options: { dynamodbEndpoint?: string | undefined; javaPath?: string | undefined },
): void {
  if (want.dynamodb && !options.dynamodbEndpoint) {
    requirePackage("amplify-dynamodb-simulator", "DynamoDB Local");
    const java = options.javaPath ?? "java";
    if (!findExecutable(java)) throw new Error(missingJava(java));
  }
  if (want.s3) requirePackage("s3rver", "the local S3 server");
  if (want.sqs) requirePackage("fauxqs", "the local SQS server");
  if (want.dynamodbStreams) requirePackage("@aws-sdk/client-dynamodb-streams", "reading a DynamoDB stream");
  if (want.kinesis) {
    requirePackage("kinesis-local", "the local Kinesis");
    requirePackage("@aws-sdk/client-kinesis", "the local Kinesis");
    requirePackage("@smithy/node-http-handler", "the local Kinesis");
  }
}

function requirePackage(name: string, what: string): void {
  try {
    import.meta.resolve(name);
  } catch {
    throw new Error(`${what} needs the npm package ${name} (npm i -D ${name})`);
  }
}

/** Whether `command` is an executable file, as a path or found on the PATH (with PATHEXT on Windows). */
export function findExecutable(command: string): boolean {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (isAbsolute(command) || command.includes("/") || command.includes("\\")) return executable(command);
  const exts = process.platform === "win32" ? (process.env.PATHEXT ?? ".EXE").split(";") : [""];
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => exts.some((ext) => executable(join(dir, command + ext))));
}
