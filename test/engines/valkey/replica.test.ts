import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import { ReplicasNotReachedError } from "../../../src/engines/valkey/errors.js";
import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { LUA_BARRIER } from "../../../src/engines/valkey/lua.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";

/** A redis-server of this test's own (this machine's binary), on a port of its own, keeping nothing on disk. */
interface Server {
  port: number;
  proc: ChildProcess;
}

const dir = mkdtempSync(join(tmpdir(), "eonce-replica-"));

async function startServer(extra: string[] = []): Promise<Server> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    const proc = spawn("redis-server", [...args, "--dir", dir, ...extra], { stdio: "ignore" });
    const client = new Redis(port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on("error", () => {});
    for (let i = 0; i < 50 && proc.exitCode === null; i++) {
      if (
        await client.connect().then(
          () => true,
          () => false,
        )
      ) {
        client.disconnect();
        return { port, proc };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    client.disconnect();
    proc.kill("SIGKILL");
    if (attempt === 4) throw new Error("redis-server did not start");
  }
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** HSETs the server ran, scripts' included (nothing else writes to this test's primary). */
const hsets = async (c: Redis) =>
  Number(/cmdstat_hset:calls=(\d+)/.exec(await c.info("commandstats"))?.[1] ?? 0);
const p = positionFromNumber;
const event = (subject: string) => ({ subject, identity: `${p(1)}:created`, position: p(1) });

/**
 * `waitForReplicas` against a real replica (a primary and a replica started here): WAIT acknowledged, WAIT timing
 * out while the replica is stopped (SIGSTOP), a refusal that waits for another connection's write (the scripts'
 * barrier), and a real failover (the primary killed, the replica promoted) that loses only what was never
 * acknowledged.
 */
describe("valkey waitForReplicas on a real replica", () => {
  let primary: Server;
  let replica: Server;
  let a: Redis;
  let b: Redis;
  const wait = { replicas: 1, timeoutMs: 300 };
  const prefix = "eonce-replica:";

  beforeAll(async () => {
    // One replica: no need for the 5 s pause (repl-diskless-sync-delay) in which Redis 7 gathers replicas to sync.
    primary = await startServer(["--repl-diskless-sync-delay", "0"]);
    replica = await startServer(["--replicaof", "127.0.0.1", String(primary.port)]);
    a = new Redis(primary.port, "127.0.0.1");
    b = new Redis(primary.port, "127.0.0.1");
    await until("the replica in sync", async () => /slave0:.*state=online/.test(await a.info("replication")));
    for (const lua of Object.values(LUA_BARRIER)) await a.script("LOAD", lua);
  }, 30_000);
  afterAll(async () => {
    a?.disconnect();
    b?.disconnect();
    replica?.proc.kill("SIGCONT");
    for (const s of [primary, replica]) s?.proc.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("acknowledged by the replica: a step is confirmed; with the replica stopped it is not, and a refusal on that step waits for it too", async () => {
    const storeA = new ValkeyStore({ client: a, keyPrefix: prefix, waitForReplicas: wait });
    const storeB = new ValkeyStore({ client: b, keyPrefix: prefix, waitForReplicas: wait });
    expect(
      (await createGuard({ store: storeA, leaseMs: 1500 }).apply(event("photos/ok.jpg"), () => 1)).status,
    ).toBe("processed");

    replica.proc.kill("SIGSTOP");
    try {
      // A commits (apply) on the primary; no replica acknowledges it.
      const landed = await createGuard({ store: storeA, leaseMs: 1500 }).apply(
        event("photos/e.jpg"),
        () => 1,
      );
      expect(landed).toMatchObject({ status: "unconfirmed" });
      expect(await storeA.read(stateKey("photos/e.jpg", "", true))).toMatchObject({ status: "done" });
      // B, on another connection, is refused on A's commit: its refusal writes (the barrier), so its WAIT covers
      // A's commit, which the replica lacks: B does not acknowledge a duplicate the replica may never have.
      const before = await hsets(b);
      const dup = await createGuard({ store: storeB, leaseMs: 1500 }).apply(event("photos/e.jpg"), () => 1);
      expect(dup).toMatchObject({ status: "unconfirmed" });
      expect((dup as { error: unknown }).error).toBeInstanceOf(ReplicasNotReachedError);
      expect(await hsets(b)).toBeGreaterThan(before);
    } finally {
      replica.proc.kill("SIGCONT");
    }
    // The replica catches up: B's next try is a confirmed duplicate.
    expect(
      (await createGuard({ store: storeB, leaseMs: 1500 }).apply(event("photos/e.jpg"), () => 1)).status,
    ).toBe("duplicate");
  });

  it("a failover to the replica loses only a step that was never confirmed; the event runs again, its folded effect once", async () => {
    const storeA = new ValkeyStore({ client: a, keyPrefix: prefix, waitForReplicas: wait });
    const sink = new ValkeyFencedSink({ store: storeA });
    const counter = (key: string) => `${prefix}count:${valkeyHashTag(key)}`;
    const apply = (store: ValkeyStore, subject: string, s: ValkeyFencedSink) =>
      createGuard({ store, leaseMs: 1500 }).apply(event(subject), (ctx) =>
        ctx.atCommit(s.increment(ctx, counter(ctx.stateKey))),
      );
    expect((await apply(storeA, "photos/kept.jpg", sink)).status).toBe("processed");
    // The link drops (the stopped replica cannot reconnect): what the primary writes now reaches no replica. A
    // stopped replica alone would still receive it into its socket's buffer.
    replica.proc.kill("SIGSTOP");
    await a.call("CLIENT", "KILL", "TYPE", "replica");
    expect((await apply(storeA, "photos/lost.jpg", sink)).status).toBe("unconfirmed");
    // The failover: the primary dies with the unreplicated commit; the replica is promoted.
    primary.proc.kill("SIGKILL");
    replica.proc.kill("SIGCONT");
    const promoted = new Redis(replica.port, "127.0.0.1");
    try {
      await promoted.replicaof("NO", "ONE");
      const store = new ValkeyStore({ client: promoted, keyPrefix: prefix });
      const s = new ValkeyFencedSink({ store });
      // Confirmed before the failover: still committed. Never confirmed: gone with its effect, and runs again.
      expect((await apply(store, "photos/kept.jpg", s)).status).toBe("duplicate");
      expect(await store.read(stateKey("photos/lost.jpg", "", true))).toBeUndefined();
      expect((await apply(store, "photos/lost.jpg", s)).status).toBe("processed");
      for (const subject of ["photos/kept.jpg", "photos/lost.jpg"])
        expect(await promoted.get(counter(stateKey(subject, "", true)))).toBe("1");
    } finally {
      promoted.disconnect();
    }
  });
});
