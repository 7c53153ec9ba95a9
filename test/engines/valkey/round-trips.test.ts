import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApplyContext, createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { countValkeyCommands } from "../../../src/engines/valkey/request-counter.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import type { RequestCounter } from "../../../src/observe/request-counter.js";
import { guardEvent, millisecondApartClock } from "../../kit/index.js";
import { claimOf, deleteKeys, testClient, testPrefix, warm } from "./harness.js";

const p = positionFromNumber;

/** Every guard step is one command at the client: one EVALSHA, whatever the outcome (docs/valkey.md). */
describe("valkey: one round trip per step", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let sink: ValkeyFencedSink;
  let commands: RequestCounter;

  beforeAll(async () => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
    sink = new ValkeyFencedSink({ store });
    // The first script on a connection may be NOSCRIPT (then EVAL): load them once outside the counts.
    await warm(store);
    commands = countValkeyCommands(client);
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  const rowOf = (key: string) => `${prefix}row:${valkeyHashTag(key)}`;

  it("the store's steps: claim, renew, commit (with two folded writes), release, apply, read: 1 each", async () => {
    const k = `o#b/${randomUUID()}`;
    const req = claimOf(k, 2);
    const steps: [string, () => Promise<unknown>][] = [
      ["claim", () => store.claim(req)],
      [
        "renew",
        () =>
          store.renew({
            key: k,
            fence: req.fence,
            leaseUntilMs: req.leaseUntilMs + 5,
            expiresAtSeconds: 9e9,
          }),
      ],
      [
        "commit",
        () =>
          store.commit({
            key: k,
            fence: req.fence,
            identity: req.identity,
            expiresAtSeconds: 9e9,
            writes: [
              sink.set({ position: p(2), fence: req.fence }, rowOf(k), "v"),
              sink.increment({ position: p(2), fence: req.fence }, `${prefix}n:${valkeyHashTag(k)}`),
            ],
          }),
      ],
      ["claim again", () => store.claim(claimOf(k, 3))],
      ["release", async () => store.release({ key: k, fence: (await store.read(k))?.fence ?? 0 })],
      [
        "apply",
        () =>
          store.claimAndCommit({
            ...claimOf(k, 4),
            writes: [sink.set({ position: p(4), fence: Date.now() * 1000 + 999 }, rowOf(k), "v4")],
          }),
      ],
    ];
    for (const [name, step] of steps) {
      commands.reset();
      await step();
      const reads = name === "release" ? 1 : 0; // the test reads the fence first
      expect({ name, commands: commands.total() - reads, evalsha: commands.counts.EVALSHA }).toEqual({
        name,
        commands: 1,
        evalsha: 1,
      });
    }
    commands.reset();
    expect(await store.read(k)).toMatchObject({ status: "done", committedPosition: p(4) });
    expect(commands.counts).toEqual({ HGETALL: 1 });
  });

  it("guard.run: new = 2 (claim, commit with its effect), duplicate = 1, stale = 1, failed = 2", async () => {
    const g = createGuard({ store, clock: millisecondApartClock() });
    const s = `bucket/${randomUUID()}`;
    const row = rowOf(stateKey(s, "", true));
    commands.reset();
    await g.run(guardEvent(s, 2), async (ctx) => ctx.atCommit(sink.set(ctx, row, "v2")));
    expect(commands.counts).toEqual({ EVALSHA: 2 });
    expect(await client.get(row)).toBe("v2");
    commands.reset();
    expect((await g.run(guardEvent(s, 2), async () => {})).status).toBe("duplicate");
    expect(commands.counts).toEqual({ EVALSHA: 1 });
    commands.reset();
    expect((await g.run(guardEvent(s, 1), async () => {})).status).toBe("stale");
    expect(commands.counts).toEqual({ EVALSHA: 1 });
    commands.reset();
    const failed = await g.run(guardEvent(s, 4), async () => {
      throw new Error("handler failed");
    });
    expect(failed.status).toBe("failed");
    expect(commands.counts).toEqual({ EVALSHA: 2 });
  });

  it("guard.apply: new with a folded effect = 1, duplicate = 1, stale = 1", async () => {
    const g = createGuard({ store, clock: millisecondApartClock() });
    const s = `bucket/${randomUUID()}`;
    const counter = `${prefix}count:${valkeyHashTag(stateKey(s, "", true))}`;
    const compute = (ctx: ApplyContext) => ctx.atCommit(sink.increment(ctx, counter));
    commands.reset();
    expect((await g.apply(guardEvent(s, 5), compute)).status).toBe("processed");
    expect(commands.counts).toEqual({ EVALSHA: 1 });
    commands.reset();
    expect((await g.apply(guardEvent(s, 5), compute)).status).toBe("duplicate");
    expect(commands.counts).toEqual({ EVALSHA: 1 });
    commands.reset();
    expect((await g.apply(guardEvent(s, 3), compute)).status).toBe("stale");
    expect(commands.counts).toEqual({ EVALSHA: 1 });
    expect(await client.get(counter)).toBe("1");
  });
});
