import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  ResourceNotFoundException,
} from "@aws-sdk/client-dynamodb";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../aws-local.js";
import { freePort } from "./free-port.js";

/**
 * Amazon's DynamoDB Local, run from the jar bundled in the npm package
 * `amplify-dynamodb-simulator` (a dev/optional dependency: never on the runtime import path).
 *
 * It has no bind option and listens on all interfaces; clients always connect via 127.0.0.1.
 * `-disableTelemetry` keeps it from sending telemetry out of the machine.
 */
export interface DynamoDBLocal {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly port: number;
  /** A client for this server with dummy credentials. */
  client(): DynamoDBClient;
  stop(): Promise<void>;
}

const DEFAULT_START_TIMEOUT_MS = 90_000;

export interface StartDynamoDBLocalOptions {
  port?: number;
  /** Java executable; default `java` on the PATH. */
  javaPath?: string;
  /**
   * How long to wait for the server to answer, default 90 000 ms: the JVM starts in a few seconds on an idle machine,
   * but takes tens of seconds on two loaded cores (CI beside a test run).
   */
  startTimeoutMs?: number;
  /**
   * One database for every access key and region (`-sharedDb`). Default true. False starts it as a user may run
   * one by hand: a database per access key and region, so clients see each other's tables only with the same
   * key pair and region (for tests of `--dynamodb-endpoint` against such a server).
   */
  sharedDb?: boolean;
  /** Aborting it kills the JVM, and the start rejects: a run that failed elsewhere does not wait for the JVM. */
  signal?: AbortSignal;
}

/** What to say when there is no Java to run DynamoDB Local. */
export function missingJava(java: string): string {
  return (
    `DynamoDB Local needs Java 17 or later, and ${JSON.stringify(java)} was not found on the PATH: ` +
    "install a JRE 17+ (or pass --dynamodb-endpoint to use a DynamoDB Local already running)"
  );
}

function emulatorDir(): string {
  const require = createRequire(import.meta.url);
  let pkg: string;
  try {
    pkg = require.resolve("amplify-dynamodb-simulator/package.json");
  } catch (cause) {
    throw new Error(
      "DynamoDB Local needs the npm package amplify-dynamodb-simulator (npm i -D amplify-dynamodb-simulator)",
      { cause },
    );
  }
  return join(dirname(pkg), "emulator");
}

export function dynamoDBClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 3,
  });
}

/** A key pair and region a client of DynamoDB Local may use. */
export interface LocalIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

/**
 * Whether a client with `other`'s key pair and region sees the tables the runtime's clients (aws-local.ts) create at
 * `endpoint`: always on a DynamoDB Local started with `-sharedDb`, only with the same pair and region without it.
 * Creates a small table, looks for it as `other`, deletes it. Undefined when the probe itself fails: no answer.
 */
export async function seesLocalTables(endpoint: string, other: LocalIdentity): Promise<boolean | undefined> {
  const local = dynamoDBClient(endpoint);
  const them = new DynamoDBClient({
    endpoint,
    region: other.region,
    credentials: { accessKeyId: other.accessKeyId, secretAccessKey: other.secretAccessKey },
    maxAttempts: 2,
  });
  const TableName = `eonce-shared-db-probe-${randomUUID()}`;
  try {
    await local.send(
      new CreateTableCommand({
        TableName,
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
  } catch {
    local.destroy();
    them.destroy();
    return undefined;
  }
  try {
    await them.send(new DescribeTableCommand({ TableName }));
    return true;
  } catch (error) {
    return error instanceof ResourceNotFoundException ? false : undefined;
  } finally {
    await local.send(new DeleteTableCommand({ TableName })).catch(() => {});
    local.destroy();
    them.destroy();
  }
}

export async function startDynamoDBLocal(options: StartDynamoDBLocalOptions = {}): Promise<DynamoDBLocal> {
  const port = options.port ?? (await freePort());
  const jvm = spawnJvm(port, options.javaPath ?? "java", options.sharedDb ?? true);
  const endpoint = `http://127.0.0.1:${port}`;
  const abort = () => jvm.child.kill("SIGKILL");
  options.signal?.addEventListener("abort", abort, { once: true });
  try {
    await answering(endpoint, jvm, Date.now() + (options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS));
  } catch (error) {
    jvm.child.kill("SIGKILL");
    throw error;
  } finally {
    options.signal?.removeEventListener("abort", abort);
  }
  return {
    endpoint,
    port,
    client: () => dynamoDBClient(endpoint),
    async stop() {
      if (jvm.exited() !== undefined) return;
      jvm.child.kill("SIGTERM");
      const timer = setTimeout(() => jvm.child.kill("SIGKILL"), 5000);
      try {
        await jvm.exit;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The DynamoDB Local JVM being started, with the tail of its output and how it exited. */
interface Jvm {
  child: ChildProcess;
  output(): string;
  /** Its exit code; -1 if it could not be spawned; undefined while it runs. */
  exited(): number | null | undefined;
  exit: Promise<void>;
}

function spawnJvm(port: number, java: string, sharedDb: boolean): Jvm {
  const args = [
    "-Djava.library.path=./DynamoDBLocal_lib",
    "-Xmx512m",
    "-jar",
    "DynamoDBLocal.jar",
    "-inMemory",
    ...(sharedDb ? ["-sharedDb"] : []),
    "-disableTelemetry",
    "-port",
    String(port),
  ];
  const child = spawn(java, args, { cwd: emulatorDir(), stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  let exited: number | null | undefined;
  // A run that ends without stop() (an uncaught error, a failed test setup) leaves no JVM behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const exit = new Promise<void>((resolve) => {
    child.on("exit", (code) => {
      exited = code;
      process.off("exit", killOnExit);
      resolve();
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      output += error.code === "ENOENT" ? missingJava(java) : String(error);
      exited = -1;
      resolve();
    });
  });
  return { child, output: () => output, exited: () => exited, exit };
}

/** Resolves once the server answers ListTables; throws if the JVM exits first or the deadline passes. */
async function answering(endpoint: string, jvm: Jvm, deadline: number): Promise<void> {
  const probe = dynamoDBClient(endpoint);
  try {
    for (;;) {
      const exited = jvm.exited();
      if (exited === -1) throw new Error(jvm.output());
      if (exited !== undefined) throw new Error(exitMessage(exited, jvm.output()));
      try {
        await probe.send(new ListTablesCommand({}));
        return;
      } catch {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not answer on ${endpoint}: ${jvm.output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    probe.destroy();
  }
}

/** One line: why the JVM exited (an old Java names the class version it cannot load). */
function exitMessage(code: number | null, output: string): string {
  if (/UnsupportedClassVersionError/.test(output)) {
    return "DynamoDB Local needs Java 17 or later; the java on the PATH is older (UnsupportedClassVersionError)";
  }
  const last = output.trim().split("\n").filter(Boolean).at(-1) ?? "no output";
  return `DynamoDB Local exited (${code}): ${last}`;
}
