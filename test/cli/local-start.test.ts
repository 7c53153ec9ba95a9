import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalServers } from "../../src/cli/local.js";

const dir = mkdtempSync(join(tmpdir(), "eonce-local-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether something accepts connections on 127.0.0.1:port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe("eonce local start", () => {
  it("keeps PostgreSQL and Valkey running until Ctrl-C, prints their URLs, and stops them on SIGINT", async () => {
    const envFile = join(dir, "env");
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/cli/main.ts",
        "local",
        "start",
        "--no-dynamodb",
        "--postgres",
        "--valkey",
        "--write-env",
        envFile,
      ],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } },
    );
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString();
        if (stdout.includes("Running until Ctrl-C")) resolve();
      });
      child.on("close", (code) => reject(new Error(`exited ${code} before it was ready:\n${stderr}`)));
    });

    const env = Object.fromEntries(
      readFileSync(envFile, "utf8")
        .trim()
        .split("\n")
        .map((line) => line.split(/=(.*)/s).slice(0, 2)),
    ) as Record<string, string>;
    expect(Object.keys(env).sort()).toEqual(["DATABASE_URL", "VALKEY_URL"]);
    expect(stdout).toContain(`export DATABASE_URL=${env.DATABASE_URL}`);
    // Each engine's line: its display name, its URL, and the flags that take it.
    expect(stdout).toContain(
      `PostgreSQL      ${env.DATABASE_URL}  (eonce run / eonce state --database-url ${env.DATABASE_URL})`,
    );
    expect(stdout).toContain(
      `Valkey          ${env.VALKEY_URL}  (eonce run --state-url, eonce state --url ${env.VALKEY_URL})`,
    );

    const pool = new pg.Pool({ connectionString: env.DATABASE_URL });
    const { rows } = await pool.query("select 41 + 1 as n");
    await pool.end();
    expect(rows[0].n).toBe(42);
    const valkey = new Redis(env.VALKEY_URL as string);
    expect(await valkey.ping()).toBe("PONG");
    valkey.disconnect();

    child.kill("SIGINT");
    expect(await exited).toBe(130);
    const pgPort = Number(new URL(env.DATABASE_URL as string).port);
    const valkeyPort = Number(new URL(env.VALKEY_URL as string).port);
    expect(await answers(pgPort)).toBe(false);
    expect(await answers(valkeyPort)).toBe(false);
  }, 120_000);

  it("starts the local payments API with --payments: PAYMENTS_API_URL on 127.0.0.1, gone once stopped", async () => {
    const servers = await startLocalServers({
      dynamodb: false,
      postgres: false,
      valkey: false,
      payments: true,
    });
    const url = servers.env.PAYMENTS_API_URL as string;
    expect(Object.keys(servers.env)).toEqual(["PAYMENTS_API_URL"]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(servers.lines.join("\n")).toContain(url);
    const res = await fetch(`${url}/v1/charges`);
    expect(await res.json()).toEqual({ data: [] });
    await servers.stop();
    expect(await answers(Number(new URL(url).port))).toBe(false);
  });

  it("refuses to start nothing", async () => {
    await expect(startLocalServers({ dynamodb: false, postgres: false, valkey: false })).rejects.toThrow(
      /nothing to start/,
    );
  });
});
