import type { Pool } from "pg";
import { qualified } from "./schema.js";
import type { PostgresChaosEnv } from "./sim-env.js";

/*
 * The cold-start steps of the PostgreSQL backends (Backend.coldStart and holdReader in backend.ts; run by
 * cold-start.ts): migrations beside live traffic, and a long reader of the live table.
 */

/**
 * The migrations' lock timeout in cold starts: generous, because the racing cold starts of one history wait on each
 * other's DDL in real time, and on a loaded machine that took more than the default 3 s (a false I3, not a finding).
 */
export const COLD_START_LOCK_TIMEOUT_MS = 30_000;

/**
 * `workers` cold starts at once, each on a pool of one connection (a Lambda instance's): `migrateLive` (the live
 * table: nothing is missing) then `migrateFresh` (one new table for all of them: they race to create it). Throws the
 * first migration error. Then, whatever happened, `dropFresh` drops the new table and whatever was made for it: a
 * run of many histories would otherwise keep thousands of them until its end.
 */
export async function coldStarts(
  env: PostgresChaosEnv,
  workers: number,
  migrateLive: (pool: Pool) => Promise<void>,
  migrateFresh: (pool: Pool) => Promise<void>,
  dropFresh: string,
): Promise<void> {
  const pools = Array.from({ length: workers }, () => env.newPool(1));
  try {
    const results = await Promise.allSettled(
      pools.map(async (p) => {
        await migrateLive(p);
        await migrateFresh(p);
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await env.pool.query(dropFresh);
  }
}

/** A transaction on a connection of its own that reads `table` and keeps its lock until ended, or for `ms`. */
export async function holdReader(
  env: PostgresChaosEnv,
  table: string,
  ms: number,
): Promise<() => Promise<void>> {
  const pool = env.newPool(1);
  const client = await pool.connect();
  let ended: Promise<void> | undefined;
  const end = () => {
    ended ??= client
      .query("ROLLBACK")
      .then(
        () => client.release(),
        (e: Error) => client.release(e),
      )
      .then(() => pool.end());
    return ended;
  };
  try {
    await client.query("BEGIN");
    await client.query(`SELECT count(*) FROM ${qualified(env.schema, table)}`);
  } catch (error) {
    await end();
    throw error;
  }
  const timer = setTimeout(end, ms);
  return () => {
    clearTimeout(timer);
    return end();
  };
}
