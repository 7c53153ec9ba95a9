import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { KinesisClient, ListStreamsCommand } from "@aws-sdk/client-kinesis";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { LOCAL_ACCOUNT_ID, LOCAL_CREDENTIALS, LOCAL_REGION } from "../aws-local.js";
import { freePort } from "./free-port.js";
import type { LocalStreamServer } from "./local-server.js";
import { ServerStartError, startServerProcess } from "./server-process.js";

/**
 * A local Kinesis API: the npm package `kinesis-local` (kinesis-mock, the Kinesis of LocalStack, built for Node;
 * docs/decisions/0011-kinesis-local.md says why this one) as a child process on a free port.
 *
 * kinesis-mock binds 0.0.0.0 and has no option for the address, so the child is started with a preload that binds
 * every server it opens to 127.0.0.1 (`LOOPBACK_PRELOAD`). Its TLS port is bound too (it always opens one); clients
 * use the plain one. Stream operations (create, split, merge) take effect after a delay it simulates: set to 0 here,
 * so a split is visible at once. Nothing is kept on disk.
 */
export interface LocalKinesisServer extends LocalStreamServer {
  /** A client for this server: dummy credentials, HTTP/1.1 (the SDK's default for Kinesis is HTTP/2). */
  client(): KinesisClient;
}

/**
 * Makes `net.Server#listen` bind 127.0.0.1 when the caller gives no host or every interface, and says on stdout when
 * a port is bound (`eonce-listening <port>`); a port it cannot bind (taken by another process since it was chosen)
 * ends the child, so that a start never talks to someone else's server on that port.
 */
const LOOPBACK_PRELOAD = `
import net from "node:net";
const listen = net.Server.prototype.listen;
const wide = (h) => h === undefined || h === null || h === "" || h === "0.0.0.0" || h === "::";
net.Server.prototype.listen = function (...args) {
  const [first, second] = args;
  if (first !== null && typeof first === "object") {
    if (first.path === undefined && wide(first.host)) args[0] = { ...first, host: "127.0.0.1" };
  } else if (typeof first === "number" || (typeof first === "string" && /^[0-9]+$/.test(first))) {
    if (typeof second !== "string") args.splice(1, 0, "127.0.0.1");
    else if (wide(second)) args[1] = "127.0.0.1";
  }
  this.once("listening", () => process.stdout.write("eonce-listening " + this.address().port + "\\n"));
  this.once("error", (e) => {
    process.stderr.write("eonce-listen-error " + e.code + "\\n");
    process.exit(1);
  });
  return listen.apply(this, args);
};
`;

export function kinesisClient(endpoint: string): KinesisClient {
  return new KinesisClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 3,
    // kinesis-mock answers HTTP/2 with a protocol error after the first request; polling needs no HTTP/2.
    requestHandler: new NodeHttpHandler(),
  });
}

/** Where kinesis-local's entry point is, or a ServerStartError that says how to install it. */
function kinesisLocalMain(): string {
  try {
    return createRequire(import.meta.url).resolve("kinesis-local");
  } catch (cause) {
    throw new ServerStartError(
      "the local Kinesis needs the npm package kinesis-local (npm i -D kinesis-local)",
      {
        cause,
      },
    );
  }
}

export async function startKinesisServer(
  options: { port?: number; startTimeoutMs?: number } = {},
): Promise<LocalKinesisServer> {
  const main = kinesisLocalMain();
  // A port chosen free can be taken by another process before the child binds it: the child then exits (the preload),
  // and the start is tried again on new ports (a port the caller fixed is kept).
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    let tlsPort = await freePort();
    while (tlsPort === port) tlsPort = await freePort();
    try {
      return await startOn(main, port, tlsPort, options.startTimeoutMs ?? 30_000);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof ServerStartError) || !/eonce-listen-error/.test(error.message))
        throw error;
    }
  }
}

async function startOn(
  main: string,
  port: number,
  tlsPort: number,
  timeoutMs: number,
): Promise<LocalKinesisServer> {
  const server = await startServerProcess({
    what: "kinesis-local",
    command: process.execPath,
    args: [`--import=data:text/javascript,${encodeURIComponent(LOOPBACK_PRELOAD)}`, main],
    spawn: {
      env: {
        PATH: process.env.PATH,
        KINESIS_MOCK_PLAIN_PORT: String(port),
        KINESIS_MOCK_TLS_PORT: String(tlsPort),
        KINESIS_MOCK_CERT_PATH: join(dirname(main), "server.json"),
        AWS_ACCOUNT_ID: LOCAL_ACCOUNT_ID,
        AWS_REGION: LOCAL_REGION,
        LOG_LEVEL: "INFO",
        ...Object.fromEntries(
          ["CREATE_STREAM", "DELETE_STREAM", "MERGE_SHARDS", "SPLIT_SHARD", "UPDATE_SHARD_COUNT"].map(
            (op) => [`${op}_DURATION`, "0ms"],
          ),
        ),
      },
    },
    // Both ports bound by this child (the preload's lines), not only announced in its log.
    ready: new RegExp(`(?=[\\s\\S]*eonce-listening ${port}\\b)(?=[\\s\\S]*eonce-listening ${tlsPort}\\b)`),
    timeoutMs,
  });
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await answering(endpoint, timeoutMs);
  } catch (error) {
    await server.stop("SIGKILL");
    throw error;
  }
  return {
    endpoint,
    port,
    address: "127.0.0.1",
    client: () => kinesisClient(endpoint),
    streamArn: (name) => `arn:aws:kinesis:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:stream/${name}`,
    stop: () => server.stop("SIGTERM"),
  };
}

/** Bound is not yet serving: wait until a request is answered. */
async function answering(endpoint: string, timeoutMs: number): Promise<void> {
  const client = kinesisClient(endpoint);
  const until = Date.now() + timeoutMs;
  try {
    for (;;) {
      try {
        await client.send(new ListStreamsCommand({}));
        return;
      } catch (error) {
        if (Date.now() > until) {
          throw new ServerStartError(`kinesis-local did not answer at ${endpoint} in ${timeoutMs} ms`, {
            cause: error,
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } finally {
    client.destroy();
  }
}
