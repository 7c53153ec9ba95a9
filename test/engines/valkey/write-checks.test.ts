import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import { durableExecutionName } from "../../../src/durable/index.js";
import { writeParams } from "../../../src/engines/valkey/atomic-write.js";
import { ValkeyWriteRefusedError } from "../../../src/engines/valkey/errors.js";
import { ValkeyStepEffects } from "../../../src/engines/valkey/index.js";
import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { LUA } from "../../../src/engines/valkey/lua.js";
import { ValkeyFencedSink, valkeyWrite } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { quietLogger, quietMetrics } from "../../durable/harness.js";
import { claimOf, deleteKeys, testClient, testPrefix } from "./harness.js";

const p = positionFromNumber;

/**
 * A commit's writes are checked as the server will run them, before the first is written (lua.ts `plan_writes`,
 * write-rules.ts): a foreign value in a target refuses the whole commit with ValkeyWriteRefusedError, the writes
 * before it (an outbox RPUSH) do not land, the state is not committed, and a second try is refused the same way.
 */
describe("valkey: every write checked before the first", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let sink: ValkeyFencedSink;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
    sink = new ValkeyFencedSink({ store });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  const subject = () => `o#b/${randomUUID()}`;
  const inSlot = (name: string, k: string) => `${prefix}${name}:${valkeyHashTag(k)}`;

  /** A claim, then a commit of an outbox RPUSH and the increments `by` of a counter holding `plant`, twice. */
  async function refusedTwice(plant: (key: string) => Promise<unknown>, by: string[]) {
    const k = subject();
    const outbox = inSlot("outbox", k);
    const counter = inSlot("n", k);
    await plant(counter);
    const before = await client.dump(counter);
    const req = claimOf(k, 1);
    await store.claim(req);
    const writes = [
      valkeyWrite(store, "rpush", outbox, "sent"),
      ...by.map((x) => valkeyWrite(store, "incr", counter, x)),
    ];
    const commit = { key: k, fence: req.fence, identity: req.identity, expiresAtSeconds: 9e9, writes };
    for (let i = 0; i < 2; i++) {
      const error = await store.commit(commit).catch((e: unknown) => e);
      expect(await client.llen(outbox)).toBe(0);
      expect(await client.dump(counter)).toEqual(before);
      expect(await store.read(k)).toMatchObject({ status: "running", fence: req.fence });
      expect(error).toBeInstanceOf(ValkeyWriteRefusedError);
      expect(error).toMatchObject({ retryable: false, message: expect.stringContaining("EONCE") });
    }
    // apply (claim and commit in one) is refused the same way, and claims nothing.
    const k2 = subject();
    const out2 = inSlot("outbox", k2);
    const n2 = inSlot("n", k2);
    await plant(n2);
    const applied = store.claimAndCommit({
      ...claimOf(k2, 1),
      writes: [
        valkeyWrite(store, "rpush", out2, "sent"),
        ...by.map((x) => valkeyWrite(store, "incr", n2, x)),
      ],
    });
    const refused = await applied.catch((e: unknown) => e);
    expect(await client.llen(out2)).toBe(0);
    expect(await store.read(k2)).toBeUndefined();
    expect(refused).toBeInstanceOf(ValkeyWriteRefusedError);
  }

  it.each([
    ["007", "007"],
    ["-0", "-0"],
    ["+1", "+1"],
    ["an integer past int64", "9223372036854775808"],
  ])("a counter stored as %s", async (_, stored) => {
    await refusedTwice((key) => client.set(key, stored), ["1"]);
  });

  it("an increment that overflows int64: INCRBY 1 on 9223372036854775807", async () => {
    await refusedTwice((key) => client.set(key, "9223372036854775807"), ["1"]);
  });

  it("two increments of one counter that overflow only together", async () => {
    await refusedTwice((key) => client.set(key, "9223372036854775806"), ["1", "1"]);
    await refusedTwice((key) => client.set(key, "-9223372036854775807"), ["-1", "-1"]);
  });

  it("many increments of one counter that overflow only together (each operand within 18 digits)", async () => {
    // 999999999999999999 + 8,224 × 999999999999999 is past int64.
    const by = Array.from({ length: 8300 }, () => "999999999999999");
    await refusedTwice((key) => client.set(key, "999999999999999999"), by);
  });

  it("a counter key of another type (a list)", async () => {
    await refusedTwice((key) => client.rpush(key, "x"), ["1"]);
  });

  it("the last value int64 holds is taken: the checks refuse no more than the server", async () => {
    const k = subject();
    const counter = inSlot("n", k);
    await client.set(counter, "9223372036854775805");
    const writes = [valkeyWrite(store, "incr", counter, "1"), valkeyWrite(store, "incr", counter, "1")];
    expect(await store.claimAndCommit({ ...claimOf(k, 1), writes })).toMatchObject({ claimed: true });
    expect(await client.get(counter)).toBe("9223372036854775807");
    // A SET before an increment in one commit: the increment counts from the value set.
    const k2 = subject();
    const n2 = inSlot("n", k2);
    const set = [valkeyWrite(store, "set", n2, "007"), valkeyWrite(store, "set", n2, "5")];
    const after = [...set, valkeyWrite(store, "incr", n2, "-9223372036854775808")];
    expect(await store.claimAndCommit({ ...claimOf(k2, 1), writes: after })).toMatchObject({ claimed: true });
    expect(await client.get(n2)).toBe("-9223372036854775803");
  });

  it("refuses, when the write is built, an increment or a score the server would refuse, and an unknown op", () => {
    const key = inSlot("n", subject());
    for (const x of ["007", "-0", "+1", " 1", "1.5", "9223372036854775808", ""])
      expect(() => valkeyWrite(store, "incr", key, x)).toThrow(OptionsError);
    expect(valkeyWrite(store, "incr", key, "-9223372036854775808").args[0]).toBe("-9223372036854775808");
    for (const x of ["nan", "", " 1", "1e400", "1e-400", "0x"])
      expect(() => valkeyWrite(store, "zadd", key, x, "m")).toThrow(OptionsError);
    for (const x of ["inf", "-Infinity", "0x1p3", ".5", "1e-310"])
      expect(valkeyWrite(store, "zadd", key, x, "m").args[0]).toBe(x);
    expect(() => sink.zadd({ position: p(1), fence: 1 }, key, Number.NaN, "m")).toThrow(OptionsError);
    expect(sink.zadd({ position: p(1), fence: 1 }, key, Number.POSITIVE_INFINITY, "m").args[0]).toBe(
      "Infinity",
    );
    // biome-ignore lint/suspicious/noExplicitAny: an op TypeScript refuses, as JavaScript may pass it
    const unknown = (op: any) => valkeyWrite(store, op, key, "x");
    expect(() => unknown("del")).toThrow(OptionsError);
    expect(() => unknown("fence")).toThrow(OptionsError);
    // A write made by hand is checked when it is sent (writeParams), by the same rules.
    const made = { ...valkeyWrite(store, "zadd", key, "1", "m"), args: ["nan", "m"] as const };
    expect(() => writeParams([made])).toThrow(OptionsError);
    expect(() => writeParams([{ ...made, op: "del" as never, args: ["x", ""] }])).toThrow(OptionsError);
  });

  it("the scripts refuse what slips past TypeScript: an unknown op, a bad score, before the first write", async () => {
    const k = subject();
    const outbox = inSlot("outbox", k);
    const stamps = `${prefix}w:${valkeyHashTag(k)}`;
    const run = (op: string, x: string) =>
      client.eval(
        LUA.put.replace("writes_or_error(1, 1, 1, {}, true)", "writes_or_error(1, 1, 2, {}, true)"),
        4,
        outbox,
        outbox,
        stamps,
        inSlot("z", k),
        ...["rpush", "", "", "", "sent", ""],
        ...[op, "f", p(1), "7", x, "m"],
      );
    await expect(run("zadd", "nan")).rejects.toThrow(/^EONCE the score "nan"/);
    await expect(run("del", "1")).rejects.toThrow(/^EONCE unknown write operation "del"/);
    await expect(run("zadd", "1e400")).rejects.toThrow(/^EONCE the score/);
    expect(await client.llen(outbox)).toBe(0);
    expect(await run("zadd", "-inf")).toBe(1);
    expect(await client.llen(outbox)).toBe(1);
    expect(await client.zscore(inSlot("z", k), "m")).toBe("-inf");
  });

  it("a guarded durable step over a foreign counter is refused with nothing written, and again on a retry", async () => {
    const effects = new ValkeyStepEffects({
      client,
      keyPrefix: prefix,
      markerExpiresAfterSeconds: 3600,
      logger: quietLogger(),
      metrics: quietMetrics(),
    });
    const s = `o#${randomUUID().slice(0, 12)}`;
    const e = { executionName: durableExecutionName(s, "v1"), subject: s, identity: "v1", position: p(1) };
    const tag = valkeyHashTag(stateKey(s, "v1", true));
    const outbox = `${prefix}outbox:${tag}`;
    const counter = `${prefix}n:${tag}`;
    await client.set(counter, "007");
    for (let i = 0; i < 2; i++) {
      const step = effects.commitStep(e, "charge", (ctx) => {
        ctx.atCommit(valkeyWrite(store, "rpush", outbox, "charged"));
        ctx.atCommit(valkeyWrite(store, "incr", counter, "1"));
      });
      await expect(step).rejects.toBeInstanceOf(ValkeyWriteRefusedError);
      expect(await client.llen(outbox)).toBe(0);
      expect(await client.get(counter)).toBe("007");
      expect(await client.keys(`${prefix}m#*`)).toEqual([]);
      expect(await client.exists(`${prefix}f#${tag}`)).toBe(0);
    }
  });
});

/** A script's second run answers as its first (docs/valkey.md): a put retried after a lost reply. */
describe("valkey: sink.put run twice", () => {
  let client: Redis;
  let prefix: string;
  let sink: ValkeyFencedSink;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    sink = new ValkeyFencedSink({ store: new ValkeyStore({ client, keyPrefix: prefix }) });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("answers applied both times, and an increment counts once", async () => {
    const tag = valkeyHashTag(`o#b/${randomUUID()}`);
    const ctx = { position: p(3), fence: 42 };
    for (const write of [
      sink.set(ctx, `${prefix}s:${tag}`, "v"),
      sink.hset(ctx, `${prefix}h:${tag}`, "f", "v"),
      sink.zadd(ctx, `${prefix}z:${tag}`, 2, "m"),
      sink.increment(ctx, `${prefix}n:${tag}`, 5),
    ]) {
      expect(await sink.put(write)).toBe("applied");
      expect(await sink.put(write)).toBe("applied");
    }
    expect(await client.get(`${prefix}n:${tag}`)).toBe("5");
    expect(await client.get(`${prefix}s:${tag}`)).toBe("v");
    // Another claim of the same position (a higher fence) lands; the first claim's retry is now stale.
    const newer = { position: p(3), fence: 43 };
    expect(await sink.put(sink.increment(newer, `${prefix}n:${tag}`, 1))).toBe("applied");
    expect(await sink.put(sink.increment(ctx, `${prefix}n:${tag}`, 5))).toBe("stale");
    expect(await client.get(`${prefix}n:${tag}`)).toBe("6");
  });
});
