import { Redis } from "ioredis";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { freePort } from "../../src/local/emulators/free-port.js";
import { startTestServers, TestServerError } from "../kit/servers.js";

/**
 * The test run's own PostgreSQL and Valkey (test/kit/servers.ts, started by test/global-setup.ts): with nothing
 * configured they are started on free ports whatever listens on the default ones, answer, and are gone after
 * stop(); a configured server that does not answer fails in seconds with one line naming the variable.
 */
describe("the test run's servers", () => {
  it("with no URL given, starts a PostgreSQL and a Valkey of its own on free ports, and stops them", async () => {
    const servers = await startTestServers({}, { postgres: true, valkey: true });
    const { postgresUrl, valkeyUrl } = servers;
    try {
      expect(new URL(postgresUrl ?? "").port).not.toBe("5432");
      expect(new URL(valkeyUrl ?? "").port).not.toBe("6379");
      const db = new pg.Client(postgresUrl);
      await db.connect();
      await db.query("CREATE SCHEMA setup_check");
      expect((await db.query("SELECT current_user AS u")).rows[0].u).toBe("postgres");
      await db.end();
      const kv = new Redis(valkeyUrl ?? "", { maxRetriesPerRequest: 0 });
      await kv.set("setup-check", "1");
      expect(await kv.get("setup-check")).toBe("1");
      kv.disconnect();
    } finally {
      await servers.stop();
    }
    const after = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 2000 });
    await expect(after.connect()).rejects.toThrow(/ECONNREFUSED/);
  });

  it("a given URL that does not answer fails within seconds, in one line naming its variable", async () => {
    const nowhere = await freePort();
    const startedMs = Date.now();
    const given = {
      EONCE_POSTGRES_URL: `postgres://postgres@127.0.0.1:${nowhere}/test`,
      EONCE_VALKEY_URL: `redis://127.0.0.1:${nowhere}`,
    };
    const error = await startTestServers(given, { postgres: true, valkey: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TestServerError);
    const lines = (error as Error).message.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^PostgreSQL at EONCE_POSTGRES_URL=.* does not answer \(.*ECONNREFUSED.*\): start it/,
    );
    expect(lines[1]).toMatch(/^Valkey at EONCE_VALKEY_URL=.* does not answer \(.*ECONNREFUSED.*\): start it/);
    expect(Date.now() - startedMs).toBeLessThan(10_000);
  });
});
