import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerState, type StateIo } from "../../../src/cli/state.js";
import { createGuard, type Guard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { runCli } from "../../kit/cli.js";
import { claimOf, deleteKeys, testClient, testPrefix, VALKEY_URL } from "./harness.js";

const p = positionFromNumber;
const MINUTE = 60_000;

interface Run {
  code: number;
  out: string;
  err: string;
}

/**
 * `eonce state … --store valkey --url … --key-prefix …` in this process (test/kit/cli.ts), as an operator runs it:
 * the command opens its own client (src/engines/valkey/engine.ts). The io is the test's: a failed command must not
 * end the test process (the real one exits soon after a failure).
 */
async function state(prefix: string, ...args: string[]): Promise<Run> {
  const r: Run = { code: 0, out: "", err: "" };
  const io: StateIo = {
    out: (s) => {
      r.out += s;
    },
    err: (s) => {
      r.err += s;
    },
    exit: (code) => {
      r.code = code;
    },
    now: () => Date.now(),
  };
  // The test's own --url, if any, comes last: commander keeps the last value.
  const flags = ["--store", "valkey", "--url", VALKEY_URL, "--key-prefix", prefix];
  const [command = "", ...rest] = args;
  const cli = await runCli((program) => registerState(program, io), ["state", command, ...flags, ...rest]);
  return { ...r, code: r.code || cli.code, err: r.err + cli.stderr };
}

const json = (r: Run) => JSON.parse(r.out) as Record<string, unknown> & { records: { key: string }[] };
const event = (subject: string, pos = 1) => ({ subject, identity: `${p(pos)}:created`, position: p(pos) });
const key = (subject: string) => `o#${subject}`;

/** A claim of `subject` taken `agoMs` ago with a lease of `leaseMs` from then (a crashed or a live holder). */
async function claimAt(store: ValkeyStore, subject: string, pos: number, agoMs: number, leaseMs: number) {
  const nowMs = Date.now() - agoMs;
  const req = claimOf(key(subject), pos, { nowMs, leaseUntilMs: nowMs + leaseMs, fence: nowMs * 1000 });
  expect((await store.claim(req)).claimed).toBe(true);
  return req.fence;
}

describe("eonce state on Valkey (--store valkey --url --key-prefix)", () => {
  let client: Redis;
  let prefix: string;
  let other: string;
  let store: ValkeyStore;
  let guard: Guard;
  const s = {
    crashed: "photos/crashed.jpg",
    live: "photos/live.jpg",
    released: "photos/released.jpg",
    done: "photos/done.jpg",
  };
  let liveFence = 0;

  beforeAll(async () => {
    client = testClient();
    prefix = testPrefix();
    other = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
    const sink = new ValkeyFencedSink({ store });
    guard = createGuard({ store, leaseMs: 5000 });
    // Done, with a folded sink write: its target and stamp hash share the prefix, and are no state records.
    const done = await guard.apply(event(s.done), (ctx) => {
      ctx.atCommit(sink.set(ctx, `${prefix}thumb:${valkeyHashTag(ctx.stateKey)}`, "t"));
      return { n: 1 };
    });
    expect(done.status).toBe("processed");
    const failed = await guard.run(event(s.released), async () => {
      throw new Error("handler failed");
    });
    expect(failed.status).toBe("failed");
    liveFence = await claimAt(store, s.live, 7, 5 * MINUTE, 15 * MINUTE);
    await claimAt(store, s.crashed, 3, 2 * MINUTE, 30_000); // its lease ended 90 s ago
    // Another prefix on the same server: never listed, never touched.
    const neighbour = new ValkeyStore({ client, keyPrefix: other });
    expect((await createGuard({ store: neighbour }).apply(event(s.done), () => 1)).status).toBe("processed");
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await deleteKeys(client, other);
    await client.quit();
  });

  it("list: the prefix's state records only, held or stuck first", async () => {
    const r = await state(prefix, "list", "--json");
    expect(r.code, r.err).toBe(0);
    expect(json(r).records.map((v) => v.key)).toEqual([s.crashed, s.live, s.released, s.done].map(key));
    const table = (await state(prefix, "list")).out.split("\n");
    expect(table[0]).toMatch(/^STATUS +LEASE +AGE +ATTEMPTS +FENCE +POSITION +KEY$/);
    expect(table[1]).toMatch(new RegExp(`^running +expired .* ${key(s.crashed)}$`));
    const running = await state(prefix, "list", "--json", "--status", "running");
    expect(json(running).records.map((v) => v.key)).toEqual([key(s.crashed), key(s.live)]);
  });

  it("get: a done record by subject, and a crashed holder's expired lease", async () => {
    const stored = await store.read(key(s.done));
    const r = await state(prefix, "get", s.done, "--json");
    expect(r.code, r.err).toBe(0);
    expect(json(r)).toMatchObject({
      key: key(s.done),
      status: "done",
      fence: stored?.fence,
      committedPosition: p(1),
      resultBytes: Buffer.byteLength(stored?.result ?? ""),
      lease: "none",
    });
    const crashed = json(await state(prefix, "get", s.crashed, "--json"));
    expect(crashed).toMatchObject({ status: "running", lease: "expired", attempts: 1 });
    const live = json(await state(prefix, "get", s.live, "--json"));
    expect(live).toMatchObject({ status: "running", lease: "live", fence: liveFence });
    const none = await state(prefix, "get", "photos/none.jpg", "--json");
    expect(none.code).toBe(1);
    expect(json(none)).toEqual({ error: "not-found", key: key("photos/none.jpg") });
  });

  it("release: refused on a moved fence; released with the fence that holds, and the next delivery runs", async () => {
    const subject = "photos/release-me.jpg";
    const fence = await claimAt(store, subject, 5, 0, 10 * MINUTE);
    const moved = await state(prefix, "release", subject, "--fence", String(fence - 1));
    expect(moved.code).toBe(1);
    expect(moved.err).toContain(`refused: the fence moved: ${key(subject)} holds fence ${fence}`);
    expect((await store.read(key(subject)))?.status).toBe("running");
    const ok = await state(prefix, "release", subject, "--fence", String(fence));
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toContain(`released ${key(subject)} at fence ${fence}`);
    expect(await store.read(key(subject))).toMatchObject({ status: "released", fence });
    expect((await guard.run(event(subject, 5), async () => "ran")).status).toBe("processed");
  });

  it("forget: refused under a live lease; deletes a crashed holder's record", async () => {
    const live = await state(prefix, "forget", s.live, "--yes", "--json");
    expect(live.code).toBe(1);
    expect(live.err).toContain(`a live lease holds ${key(s.live)} (fence ${liveFence}`);
    expect(await store.read(key(s.live))).toMatchObject({ status: "running", fence: liveFence });
    const gone = await state(prefix, "forget", s.crashed, "--yes", "--json");
    expect(gone.code, gone.err).toBe(0);
    expect(json(gone)).toMatchObject({ forgotten: true, record: { key: key(s.crashed), lease: "expired" } });
    expect(await store.read(key(s.crashed))).toBeUndefined();
    expect(await client.exists(store.redisKeyOf(key(s.crashed)))).toBe(0);
    // The neighbour's record of the same subject is where it was.
    expect(await new ValkeyStore({ client, keyPrefix: other }).read(key(s.done))).toMatchObject({
      status: "done",
    });
  });

  it("a server that is not there: exit 2 with the connection error, not a hang", async () => {
    const r = await state(prefix, "list", "--url", "redis://127.0.0.1:1");
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/ECONNREFUSED|connect/i);
  });
});
