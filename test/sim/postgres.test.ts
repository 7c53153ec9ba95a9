import { spawn } from "node:child_process";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { postgresInlineBackend } from "../../src/engines/postgres/inline-sim-backend.js";
import { postgresBackend, postgresChaosEnv } from "../../src/engines/postgres/sim-backend.js";
import { CHAOS_SCHEMA_PREFIX, ownChaosSchema } from "../../src/engines/postgres/sim-schema.js";
import { runCampaign, runSeed } from "../../src/sim/campaign.js";
import { POSTGRES_URL } from "../kit/postgres.js";

const HISTORIES = 100;

describe.each(["postgres", "postgres-inline"] as const)(
  "fault simulator: seeded histories on PostgreSQL (%s)",
  (store) => {
    it(`${HISTORIES} histories break no invariant`, async () => {
      const s = await runCampaign({
        histories: HISTORIES,
        seed: 1,
        engine: "postgres",
        inline: store !== "postgres",
      });
      expect(s.histories).toBe(HISTORIES);
      expect(s.violations, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
      for (const k of ["fail-before", "lose-response", "delay", "hang", "pause", "duplicate"] as const)
        expect(s.faults[k], k).toBeGreaterThan(5);
    }, 180_000);
  },
);

/*
 * Nothing of a run stays in the database (src/engines/postgres/sim-schema.ts): each cold start drops what it made,
 * the run drops its schema at its end, Ctrl-C ends it so too, and a run killed outright is swept by the next.
 */
const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
afterAll(() => admin.end());
const exists = async (schema: string) =>
  (await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rows.length > 0;
const runSchemas = async () =>
  (
    await admin.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE nspname LIKE $1", [
      `${CHAOS_SCHEMA_PREFIX}%`,
    ])
  ).rows.map((r) => r.nspname);
/** The schema's tables, indexes and functions. */
const objects = async (schema: string) =>
  Number(
    (
      await admin.query(
        `SELECT (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1)
          + (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1) AS n`,
        [schema],
      )
    ).rows[0].n,
  );
const owner = async () => {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  return { client, run: await ownChaosSchema(client) };
};

describe.each(["postgres", "postgres-inline"] as const)(
  "a run on PostgreSQL (%s) leaves nothing",
  (store) => {
    it("each cold start drops the table and functions it made: the run's schema keeps what it held at its start; closed, nothing", async () => {
      const env = await postgresChaosEnv();
      const sim = {
        backend: () => (store === "postgres" ? postgresBackend(env) : postgresInlineBackend(env)),
        close: () => env.close(),
      };
      const start = await objects(env.schema);
      let coldStarts = 0;
      for (let seed = 1; seed <= 10; seed++)
        coldStarts +=
          (await runSeed(seed, { engine: "postgres", inline: store !== "postgres", env: sim })).faults[
            "cold-start"
          ] ?? 0;
      expect(coldStarts).toBeGreaterThan(5);
      expect(await objects(env.schema)).toBe(start);
      await sim.close();
      expect(await exists(env.schema)).toBe(false);
    }, 120_000);

    it("Ctrl-C: no history starts after it, the running ones finish, the schema is dropped, exit 130", async () => {
      const before = new Set(await runSchemas());
      const child = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          "src/cli/chaos.ts",
          "--engine",
          "postgres",
          ...(store === "postgres" ? [] : ["--inline"]),
          "--histories",
          "100000",
          "--seed",
          "7",
        ],
        // A group of its own, as a terminal's job.
        { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"], detached: true },
      );
      let stderr = "";
      let stdout = "";
      child.stderr.on("data", (d) => {
        stderr += d;
      });
      child.stdout.on("data", (d) => {
        stdout += d;
      });
      const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
      let schema: string | undefined;
      for (let i = 0; i < 600 && !schema; i++) {
        await new Promise((r) => setTimeout(r, 100));
        schema = (await runSchemas()).find((s) => !before.has(s));
      }
      expect(schema, stderr).toBeDefined();
      await new Promise((r) => setTimeout(r, 3000));
      // As a terminal's Ctrl-C: the whole process group gets it.
      process.kill(-(child.pid as number), "SIGINT");
      expect(await closed, stderr).toBe(130);
      expect(stderr).toMatch(/interrupted \(SIGINT\) after \d+ histories/);
      expect(stdout).toMatch(/histories on postgres/);
      expect(await exists(schema as string)).toBe(false);
    }, 180_000);
  },
);

describe("PostgreSQL run schemas", () => {
  it("a run sweeps the schemas of runs whose session ended (killed), never a live run's", async () => {
    const live = await owner();
    const dead = await owner();
    await admin.query(`CREATE TABLE "${dead.run.schema}".t (id int PRIMARY KEY)`);
    // As a killed process: the session ends, the schema stays.
    const pid = (await dead.client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
    await admin.query("SELECT pg_terminate_backend($1, 10000)", [pid]);
    expect(await exists(dead.run.schema)).toBe(true);
    const next = await owner();
    expect(await exists(dead.run.schema)).toBe(false);
    expect(await exists(live.run.schema)).toBe(true);
    await next.run.drop();
    await live.run.drop();
    expect(await exists(live.run.schema)).toBe(false);
    expect(await exists(next.run.schema)).toBe(false);
  });
});
