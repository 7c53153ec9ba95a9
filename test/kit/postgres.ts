import { randomUUID } from "node:crypto";
import pg from "pg";
import type { PostgresClient, PostgresPool } from "../../src/engines/postgres/pool.js";

/**
 * The PostgreSQL server the postgres suites use: `EONCE_POSTGRES_URL`, which the integration project sets to the
 * run's server (test/global-setup.ts: the given URL, else one of the run's own). Each suite works in a schema of its
 * own, dropped after; an unreachable server fails the suite (EONCE_STORES leaves the engine out instead).
 */
export const POSTGRES_URL = process.env.EONCE_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export interface TestDatabase {
  pool: pg.Pool;
  schema: string;
  /** Drops the schema and ends the pool. */
  close(): Promise<void>;
}

export async function testDatabase(prefix = "eonce"): Promise<TestDatabase> {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 8 });
  const schema = `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  try {
    await pool.query(`CREATE SCHEMA "${schema}"`);
  } catch (error) {
    await pool.end();
    throw new Error(`PostgreSQL at ${POSTGRES_URL} is not usable (EONCE_STORES can leave postgres out)`, {
      cause: error,
    });
  }
  return {
    pool,
    schema,
    close: async () => {
      await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
      await pool.end();
    },
  };
}

/** A fenced sink table as PostgresFencedSink's defaults expect it. */
export async function createSinkTable(pool: PostgresPool, schema: string, table: string): Promise<void> {
  await pool.query(
    `CREATE TABLE "${schema}"."${table}" (pk text PRIMARY KEY, value text, src_pos text, src_fence bigint)`,
  );
}

/**
 * A pool whose next `count` answers are lost after the statement took effect: an autocommitted statement, or a
 * transaction's COMMIT, lands and the caller gets a dropped-connection error (no SQLSTATE). Statements inside a
 * transaction are not lost: losing one would roll the transaction back, which is no lost response.
 */
export function losingPool(pool: pg.Pool): { pool: PostgresPool; lose(count: number): void } {
  let toLose = 0;
  const afterLanding = async <T>(result: Promise<T>): Promise<T> => {
    const out = await result;
    if (toLose > 0) {
      toLose--;
      throw new Error("Connection terminated unexpectedly (injected: the statement landed)");
    }
    return out;
  };
  const losing: PostgresPool = {
    query: ((sql: string, params?: unknown[]) =>
      afterLanding(pool.query(sql, params))) as PostgresPool["query"],
    connect: async () => losingClient(await pool.connect(), afterLanding),
  };
  return {
    pool: losing,
    lose(count) {
      toLose += count;
    },
  };
}

function losingClient(client: pg.PoolClient, afterLanding: <T>(r: Promise<T>) => Promise<T>): PostgresClient {
  return {
    query: ((sql: string, params?: unknown[]) =>
      sql === "COMMIT"
        ? afterLanding(client.query(sql))
        : client.query(sql, params)) as PostgresClient["query"],
    release: (destroy?: boolean | Error) => client.release(destroy),
  };
}

/** Statements a pool ran: autocommitted ones, transactions (BEGIN … COMMIT/ROLLBACK) and the statements inside. */
export interface StatementCount {
  statements: number;
  transactions: number;
  inTransactions: number;
}

/** A pool that counts what it is asked to run, for the statements-per-outcome tests. */
export function countingPool(pool: pg.Pool): { pool: PostgresPool; count: StatementCount; reset(): void } {
  const count: StatementCount = { statements: 0, transactions: 0, inTransactions: 0 };
  const counting: PostgresPool = {
    query: ((sql: string, params?: unknown[]) => {
      count.statements++;
      return pool.query(sql, params);
    }) as PostgresPool["query"],
    connect: async () => {
      const client = await pool.connect();
      return {
        query: ((sql: string, params?: unknown[]) => {
          if (sql === "BEGIN") count.transactions++;
          else if (sql !== "COMMIT" && sql !== "ROLLBACK") count.inTransactions++;
          return client.query(sql, params);
        }) as PostgresClient["query"],
        release: (destroy?: boolean | Error) => client.release(destroy),
      };
    },
  };
  return {
    pool: counting,
    count,
    reset: () => Object.assign(count, { statements: 0, transactions: 0, inTransactions: 0 }),
  };
}
