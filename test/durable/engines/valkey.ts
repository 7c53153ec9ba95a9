import type { AtomicWrite } from "../../../src/core/store.js";
import type { StepEffectContext } from "../../../src/durable/index.js";
import { postgresWrite } from "../../../src/engines/postgres/atomic-write.js";
import { ValkeyStepEffects } from "../../../src/engines/valkey/index.js";
import { LUA } from "../../../src/engines/valkey/lua.js";
import { countValkeyCommands } from "../../../src/engines/valkey/request-counter.js";
import { ValkeyFencedSink, valkeyWrite } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { deleteKeys, testClient, testPrefix } from "../../engines/valkey/harness.js";
import { quietLogger, quietMetrics } from "../harness.js";
import type { StepEngineUnderTest } from "./under-test.js";

/**
 * This machine's Redis: a key prefix per suite (deleted after, never FLUSHALL), the store and the step effects on one
 * client (the dispatcher's commit folds the fence move only then). A step's writes must be in its state key's slot
 * (`effects.hashTag`): events without a position have one state key, so one slot, each, and a subject's row is then
 * one key per event; the adapter remembers the keys it wrote to read a row back.
 */
export const stepsUnderTest: StepEngineUnderTest = {
  name: "valkey",
  async open() {
    const client = testClient();
    const prefix = testPrefix();
    // Cached up front: the first step then costs its one EVALSHA, not a NOSCRIPT and an EVAL.
    for (const lua of [LUA.step, LUA.stopStep]) await client.script("LOAD", lua);
    const store = new ValkeyStore({ client, keyPrefix: prefix, minRetentionMs: 3_600_000 });
    const sink = new ValkeyFencedSink({ store });
    const effects = new ValkeyStepEffects({
      client,
      keyPrefix: prefix,
      logger: quietLogger(),
      metrics: quietMetrics(),
    });
    const written = new Map<string, Set<string>>();
    const keyOf = (kind: string, ctx: StepEffectContext, row: string) => {
      const tag = effects.hashTag({ ...ctx, position: ctx.position ?? null });
      const key = `${prefix}${kind}:${tag}${row}`;
      const name = `${kind}|${ctx.subject}|${row}`;
      written.set(name, (written.get(name) ?? new Set()).add(key));
      return key;
    };
    const keysOf = (kind: string, subject: string, row: string) => [
      ...(written.get(`${kind}|${subject}|${row}`) ?? []),
    ];
    const counter = countValkeyCommands(client);
    return {
      effects,
      store,
      increment: (ctx, row) => valkeyWrite(store, "incr", keyOf("count", ctx, row), "1"),
      async count(subject, row) {
        const keys = keysOf("count", subject, row);
        const values = keys.length === 0 ? [] : await client.mget(...keys);
        return values.reduce((n, v) => n + Number(v ?? 0), 0);
      },
      fencedPut: (ctx, row, value) => sink.set(ctx, keyOf("row", ctx, row), value),
      async value(subject, row) {
        const [key] = keysOf("row", subject, row);
        return key === undefined ? undefined : ((await client.get(key)) ?? undefined);
      },
      foreignWrite: (): AtomicWrite => postgresWrite("SELECT 1"),
      requests: () => counter.total(),
      async close() {
        await deleteKeys(client, prefix);
        await client.quit();
      },
    };
  },
};
