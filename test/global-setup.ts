import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { ensureTestPrerequisites } from "../scripts/test-prerequisites.mjs";
import { type DynamoDBLocal, startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { startTestServers, type TestServers } from "./kit/servers.js";
import { wantsStore } from "./kit/store-names.js";

let ddb: DynamoDBLocal | undefined;
let servers: TestServers | undefined;
/** The pack cache this setup made (none when EONCE_PACK_CACHE named one already, as .ci/run does for its runs). */
let packCache: string | undefined;

/** Fails the run with these lines only, no stack: each says what to do. */
function oneLine(message: string): Error {
  const error = new Error(message);
  error.stack = error.message;
  return error;
}

/**
 * The integration project's setup: what the machine must have (Java for DynamoDB Local, Chromium for the report
 * test, a Valkey or Redis server binary; installed here when possible, as `npm test`'s pretest does), then the run's
 * servers, started side by side: one DynamoDB Local, provided as `inject("dynamodbEndpoint")`, and a PostgreSQL and
 * a Valkey of the run's own unless EONCE_POSTGRES_URL / EONCE_VALKEY_URL name running ones (test/kit/servers.ts),
 * provided as `inject("postgresUrl")` / `inject("valkeyUrl")` and set as those variables in every test file
 * (test/kit/server-env.ts).
 */
export async function setup(project: TestProject) {
  const wants = (store: Parameters<typeof wantsStore>[1]) => wantsStore(process.env.EONCE_STORES, store);
  const valkey = wants("valkey");
  const problems = ensureTestPrerequisites({ valkey });
  if (problems.length > 0) throw oneLine(problems.join("\n"));
  // PostgreSQL also serves suites outside the postgres engines' (the CLI's state commands, eonce run): always.
  // A JVM's start on a busy 2-core machine can take longer than the runtime's default.
  const jvm = new AbortController();
  const starting = startDynamoDBLocal({ startTimeoutMs: 90_000, signal: jvm.signal });
  try {
    servers = await startTestServers(process.env, { postgres: true, valkey });
  } catch (error) {
    // Fails now, not after the JVM's start.
    jvm.abort();
    await starting.catch(() => {});
    throw oneLine((error as Error).message);
  }
  try {
    ddb = await starting;
  } catch (error) {
    await teardown();
    throw oneLine((error as Error).message);
  }
  const started = servers?.startMs ?? {};
  if (process.env.EONCE_SETUP_TIMES) {
    process.stderr.write(`test servers: postgres ${started.postgres} ms, valkey ${started.valkey} ms\n`);
  }
  project.provide("dynamodbEndpoint", ddb?.endpoint ?? "");
  project.provide("postgresUrl", servers?.postgresUrl ?? "");
  project.provide("valkeyUrl", servers?.valkeyUrl ?? "");
  // One `npm pack` for the run: both packed-project files install the same tarball (scripts/packed-project.mjs).
  if (!process.env.EONCE_PACK_CACHE) packCache = await mkdtemp(join(tmpdir(), "eonce-pack-"));
  project.provide("packCache", process.env.EONCE_PACK_CACHE ?? packCache ?? "");
}

export async function teardown() {
  await Promise.all([
    ddb?.stop(),
    servers?.stop(),
    packCache && rm(packCache, { recursive: true, force: true }),
  ]);
  ddb = undefined;
  servers = undefined;
  packCache = undefined;
}
