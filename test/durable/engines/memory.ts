import { MemoryStepEffects } from "../../../src/engines/memory/step-effects.js";
import { type MemoryAtomicWrite, MemoryStore } from "../../../src/engines/memory/store.js";
import { postgresWrite } from "../../../src/engines/postgres/atomic-write.js";
import { quietLogger, quietMetrics } from "../harness.js";
import type { StepEngineUnderTest } from "./under-test.js";

/** Memory: the steps' maps, a guard store, and the counters and fenced rows as maps beside them. */
export const stepsUnderTest: StepEngineUnderTest = {
  name: "memory",
  async open() {
    const counters = new Map<string, number>();
    const rows = new Map<string, { value: string; pos: string; fence: number }>();
    const key = (subject: string, row: string) => `${subject}#${row}`;
    const write = (description: string, land: () => boolean): MemoryAtomicWrite => ({
      engine: "memory",
      description,
      land,
    });
    return {
      effects: new MemoryStepEffects({ logger: quietLogger(), metrics: quietMetrics() }),
      store: new MemoryStore(),
      increment: (ctx, row) =>
        write(`count ${row}`, () => {
          const k = key(ctx.subject, row);
          counters.set(k, (counters.get(k) ?? 0) + 1);
          return true;
        }),
      count: async (subject, row) => counters.get(key(subject, row)) ?? 0,
      // The fenced rule (src/core/fence.ts): a row holding a later position, or the same one at a fence as high, wins.
      fencedPut: (ctx, row, value) =>
        write(`put ${row}`, () => {
          const k = key(ctx.subject, row);
          const pos = ctx.position ?? "";
          const old = rows.get(k);
          if (old && (old.pos > pos || (old.pos === pos && old.fence >= ctx.fence))) return false;
          rows.set(k, { value, pos, fence: ctx.fence });
          return true;
        }),
      value: async (subject, row) => rows.get(key(subject, row))?.value,
      foreignWrite: () => postgresWrite("SELECT 1"),
      close: async () => {},
    };
  },
};
