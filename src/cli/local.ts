import { writeFileSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import type { ConnectionKey } from "../engines/connection.js";
import type { LocalServerRole } from "../engines/engine.js";
import { ENGINES } from "../engines/registry.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../local/aws-local.js";
import { onShutdownSignal } from "../local/emulators/shutdown.js";
import { exitSoon, oneLine } from "./errors.js";
import { RUN_STATE_FLAG_NAMES } from "./run/options.js";
import { STATE_FLAG_NAMES } from "./state/options.js";

/** Commander's options: `dynamodb` and `payments`, and one flag per engine with a local server (`postgres`, …). */
interface LocalStartOptions {
  dynamodb: boolean;
  /** The local payments API (src/local/emulators/payments-server.ts). Absent: not started. */
  payments?: boolean;
  dynamodbPort?: number;
  writeEnv?: string;
  /** An engine's flag (its name in camel case, as commander names it); absent: not started. */
  [engineFlag: string]: boolean | number | string | undefined;
}

interface Started {
  /** `KEY=value` lines for a shell or a `.env` file. */
  env: Record<string, string>;
  lines: string[];
  stop(): Promise<void>;
}

async function startDynamoDB(port: number | undefined): Promise<Started> {
  const { startDynamoDBLocal } = await import("../local/emulators/dynamodb-local.js");
  const server = await startDynamoDBLocal(port === undefined ? {} : { port });
  return {
    env: {
      AWS_ENDPOINT_URL_DYNAMODB: server.endpoint,
      // DynamoDB Local runs with -sharedDb, so any pair works; this is the one eonce run gives its handlers.
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_REGION: LOCAL_REGION,
    },
    lines: [
      `DynamoDB Local  ${server.endpoint}  (eonce run --dynamodb-endpoint ${server.endpoint}; eonce state --endpoint ${server.endpoint})`,
    ],
    stop: () => server.stop(),
  };
}

/** A server with a URL (an engine's, the payments API): its variable, and the flags that take the URL. */
async function startUrlServer(
  server: Promise<{ url: string; stop(): Promise<void> }>,
  label: string,
  variable: string,
  flags: string,
): Promise<Started> {
  const started = await server;
  const { url } = started;
  return {
    env: { [variable]: url },
    lines: [`${label.padEnd(15)} ${url}  (${flags} ${url})`],
    stop: () => started.stop(),
  };
}

/** A server `start local` starts behind its flag (`--<option>`), loaded only when asked for. */
interface UrlServer {
  /** The flag's name, and the option's in commander's camel case. */
  flag: string;
  option: string;
  label: string;
  /** For the flag's help: `also start <description>`. */
  description: string;
  variable: string;
  /** The commands and flags that take the URL, for the printed line. */
  takenBy: string;
  start(): Promise<{ url: string; stop(): Promise<void> }>;
}

/** `eonce run` and `eonce state`'s flags for a connection option: one phrase when both name it alike. */
function flagsOf(option: ConnectionKey): string {
  const run = RUN_STATE_FLAG_NAMES[option];
  const state = STATE_FLAG_NAMES[option];
  return run === state ? `eonce run / eonce state ${run}` : `eonce run ${run}, eonce state ${state}`;
}

const camelCase = (name: string) => name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The engines with a local server (src/engines/registry.ts), each behind a flag of its name, then the payments API. */
function urlServers(): UrlServer[] {
  const engines = ENGINES.filter((e) => e.localServer && !e.inline).map((e) => {
    const local = e.localServer as LocalServerRole;
    return {
      flag: e.name,
      option: camelCase(e.name),
      label: e.displayName,
      description: local.description,
      variable: e.env[local.option] as string, // the registry requires it
      takenBy: flagsOf(local.option),
      start: () => local.start(),
    };
  });
  const payments: UrlServer = {
    flag: "payments",
    option: "payments",
    label: "Payments API",
    description: "the local payments API (idempotency keys; docs/effects.md)",
    variable: "PAYMENTS_API_URL",
    takenBy: "chargeWithKey of examples/shared/payments.ts",
    start: () =>
      import("../local/emulators/payments-server.js").then(async (m) => {
        const server = await m.startPaymentsServer();
        return { url: server.endpoint, stop: () => server.stop() };
      }),
  };
  return [...engines, payments];
}

/** Starts the chosen servers; if one fails, those already started are stopped before the error is thrown. */
export async function startLocalServers(o: LocalStartOptions): Promise<Started> {
  const starts: (() => Promise<Started>)[] = [];
  if (o.dynamodb) starts.push(() => startDynamoDB(o.dynamodbPort));
  const servers = urlServers();
  for (const s of servers)
    if (o[s.option] === true) starts.push(() => startUrlServer(s.start(), s.label, s.variable, s.takenBy));
  if (starts.length === 0) {
    const flags = servers.map((s) => `--${s.flag}`);
    throw new Error(
      `nothing to start: --no-dynamodb without ${flags.slice(0, -1).join(", ")} or ${flags.at(-1)}`,
    );
  }
  const started: Started[] = [];
  const stop = async () => {
    await Promise.allSettled(started.map((s) => s.stop()));
  };
  try {
    for (const start of starts) started.push(await start());
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    env: Object.assign({}, ...started.map((s) => s.env)),
    lines: started.flatMap((s) => s.lines),
    stop,
  };
}

function port(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 65_535)
    throw new InvalidArgumentError("expected a port (1 to 65535)");
  return n;
}

async function localStart(o: LocalStartOptions): Promise<void> {
  let servers: Started;
  try {
    servers = await startLocalServers(o);
  } catch (error) {
    process.stderr.write(`eonce local start: ${oneLine(error)}\n`);
    process.exitCode = 2;
    exitSoon();
    return;
  }
  const env = Object.entries(servers.env).map(([k, v]) => `${k}=${v}`);
  try {
    if (o.writeEnv) writeFileSync(o.writeEnv, `${env.join("\n")}\n`);
  } catch (error) {
    await servers.stop();
    process.stderr.write(`eonce local start: --write-env: ${oneLine(error)}\n`);
    process.exitCode = 2;
    return;
  }
  onShutdownSignal(servers.stop);
  process.stdout.write(
    `${servers.lines.join("\n")}\n\n` +
      `For your shell (the AWS SDK reads AWS_ENDPOINT_URL_DYNAMODB):\n` +
      `${env.map((line) => `export ${line}`).join("\n")}\n\n` +
      "Running until Ctrl-C, which stops them and deletes their data.\n",
  );
  // The servers' child processes and sockets keep the event loop alive until the signal handler exits.
}

/**
 * `eonce local start`: the servers `eonce run` starts and drops, kept running until Ctrl-C, so that a user can run
 * `eonce run --dynamodb-endpoint` (or an engine's variable: `DATABASE_URL`, …) against them and count the effects in the
 * tables afterwards. Nothing is kept on disk: each server's data goes when it stops.
 */
export function registerLocal(program: Command): void {
  const servers = urlServers();
  const labels = servers.map((s) => s.label).slice(0, -1);
  const local = program
    .command("local")
    .description(
      `local servers that outlive a run: DynamoDB Local, ${labels.join(", ")}, a payments API (docs/local-runtime.md)`,
    );
  const start = local
    .command("start")
    .description(
      `start DynamoDB Local (and ${labels.join(", ")}, the payments API) on 127.0.0.1, print their endpoints and environment, run until Ctrl-C`,
    )
    .option("--no-dynamodb", "do not start DynamoDB Local (it needs Java 17+)");
  for (const s of servers) start.option(`--${s.flag}`, `also start ${s.description}`, false);
  start
    .option("--dynamodb-port <port>", "DynamoDB Local's port (default: a free one)", port)
    .option("--write-env <path>", "also write the environment as KEY=value lines to this file")
    .action((o: LocalStartOptions) => localStart(o));
}
