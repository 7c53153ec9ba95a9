import { randomUUID } from "node:crypto";
import type { Client } from "pg";
import type { Queryable } from "./migration.js";
import { qualified, quote } from "./schema.js";

/*
 * The schema of one simulator run on PostgreSQL (sim-backend.ts), owned for as long as the run lives: nothing of a
 * run may stay in the database, whether it ends, fails, is interrupted or is killed.
 *
 * The run holds a session advisory lock on its schema's name on a connection of its own (`ChaosSchemaOwner`) from
 * before the schema exists until it is dropped. The server releases a session lock when its session ends, however
 * the process died, so a schema of this naming whose lock anyone can take has no live owner: each run, before it
 * creates its own, drops those (`sweepChaosSchemas`). Safe beside concurrent runs, on this machine or another: a
 * live run's lock is held, its schema skipped.
 */

/** The names of the runs' schemas; `_` escaped for LIKE. */
export const CHAOS_SCHEMA_PREFIX = "eonce_chaos_";
const CHAOS_SCHEMA_LIKE = "eonce\\_chaos\\_%";
/** The first key of the runs' advisory locks (the second is the schema name's hash): "eonc". */
const LOCK_CLASS = 0x656f6e63;
/** Objects dropped per statement: each takes a lock (a table also its indexes' and TOAST's) until it commits. */
const DROP_BATCH = 25;

const lockArgs = (schema: string) => [LOCK_CLASS, schema];
const LOCK_KEY = "$1::int, hashtext($2)";

/** The connection that holds a run's schema, and the schema. */
export interface ChaosSchemaOwner {
  schema: string;
  /** Drops the schema and everything in it, then ends the owner's session. Idempotent. */
  drop(): Promise<void>;
}

/**
 * Sweeps the schemas of dead runs, then makes the run's own schema (empty) and holds it: `client` (connected, used
 * for nothing else) keeps its lock until `drop`.
 */
export async function ownChaosSchema(client: Client): Promise<ChaosSchemaOwner> {
  // An owner whose server goes away fails its next statement; the error event must not end the process.
  client.on("error", () => {});
  await sweepChaosSchemas(client);
  const schema = `${CHAOS_SCHEMA_PREFIX}${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  await client.query(`SELECT pg_advisory_lock(${LOCK_KEY})`, lockArgs(schema));
  await client.query(`CREATE SCHEMA ${quote(schema)}`);
  let dropped: Promise<void> | undefined;
  return {
    schema,
    drop: () => {
      dropped ??= dropChaosSchema(client, schema).finally(() => client.end());
      return dropped;
    },
  };
}

/** Drops every run schema whose owner is gone (its lock free); returns their names. */
export async function sweepChaosSchemas(client: Client): Promise<string[]> {
  const out = await client.query<{ nspname: string }>(
    "SELECT nspname FROM pg_namespace WHERE nspname LIKE $1 ORDER BY nspname",
    [CHAOS_SCHEMA_LIKE],
  );
  const swept: string[] = [];
  for (const { nspname } of out.rows) {
    const got = await client.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(${LOCK_KEY}) AS ok`,
      lockArgs(nspname),
    );
    if (!got.rows[0]?.ok) continue;
    try {
      await dropChaosSchema(client, nspname);
      swept.push(nspname);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${LOCK_KEY})`, lockArgs(nspname));
    }
  }
  return swept;
}

/**
 * Drops a schema with its tables and functions, a batch per statement: one `DROP SCHEMA … CASCADE` takes a lock per
 * object in one transaction, which runs out of the server's lock table (`max_locks_per_transaction`, 64 by default
 * per connection) once a schema holds a few thousand.
 */
export async function dropChaosSchema(db: Queryable, schema: string): Promise<void> {
  for (;;) {
    const tables = await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') LIMIT ${DROP_BATCH}`,
      [schema],
    );
    if (tables.rows.length === 0) break;
    await db.query(
      `DROP TABLE IF EXISTS ${tables.rows.map((r) => qualified(schema, r.name)).join(", ")} CASCADE`,
    );
  }
  for (;;) {
    const functions = await db.query<{ signature: string }>(
      `SELECT p.oid::regprocedure::text AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = $1 LIMIT ${DROP_BATCH}`,
      [schema],
    );
    if (functions.rows.length === 0) break;
    await db.query(`DROP FUNCTION IF EXISTS ${functions.rows.map((r) => r.signature).join(", ")} CASCADE`);
  }
  await db.query(`DROP SCHEMA IF EXISTS ${quote(schema)} CASCADE`);
}
