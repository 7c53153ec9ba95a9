import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { KinesisStreamRecord } from "aws-lambda";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type MemoryAtomicWrite, MemoryStore } from "../../src/engines/memory/store.js";
import { kinesisHandler, type WrapperMode } from "../../src/lambda/index.js";
import { kinesisRecord, lambdaContext, streamEvent } from "../kit/index.js";

/**
 * Lambda's checkpoint, modelled: the shard is redelivered from the returned sequence number until a batch succeeds.
 * Whatever records fail (once each) and however the batch is split by subject, every record's effect happens exactly
 * once and each partition key's effects happen in shard order.
 */

const QUIET = {
  logger: new Logger({ logLevel: "SILENT" }),
  metrics: { addDimension() {}, addMetric() {}, publishStoredMetrics() {} } as unknown as Metrics,
};

const shard = fc.array(fc.record({ key: fc.constantFrom("a", "b", "c"), fails: fc.boolean() }), {
  minLength: 1,
  maxLength: 12,
});

describe("kinesisHandler under Lambda's checkpoint (property)", () => {
  it.each(["run", "apply"] as const)(
    "mode %s: exactly once, in shard order per partition key",
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(shard, fc.integer({ min: 1, max: 4 }), async (plan, concurrency) => {
          const store = new MemoryStore();
          const records: KinesisStreamRecord[] = plan.map((p, i) =>
            kinesisRecord({ partitionKey: p.key, data: { i }, sequenceNumber: String(1000 + i * 7) }),
          );
          const failing = new Set(plan.flatMap((p, i) => (p.fails ? [i] : [])));
          const effects: number[] = [];
          const compute = (i: number) => {
            if (failing.delete(i)) throw new Error(`record ${i} fails once`);
            return i;
          };
          const index = (json: unknown) => (json as { i: number }).i;
          const handler =
            (mode as WrapperMode) === "apply"
              ? kinesisHandler(
                  (record, ctx) => {
                    const i = compute(index(record.json));
                    const write: MemoryAtomicWrite = {
                      engine: "memory",
                      description: `effect of record ${i}`,
                      land: () => effects.push(i) > 0,
                    };
                    ctx.atCommit(write);
                    return i;
                  },
                  { store, mode: "apply", concurrency, ...QUIET },
                )
              : kinesisHandler(
                  async (record) => {
                    const i = compute(index(record.json));
                    effects.push(i);
                    return i;
                  },
                  { store, concurrency, ...QUIET },
                );
          let from = 0;
          for (let invocations = 0; from < records.length; invocations++) {
            expect(invocations).toBeLessThanOrEqual(records.length);
            const { batchItemFailures } = await handler(streamEvent(...records.slice(from)), lambdaContext());
            if (batchItemFailures.length === 0) break;
            expect(batchItemFailures).toHaveLength(1);
            const at = records.findIndex(
              (r) => r.kinesis.sequenceNumber === batchItemFailures[0]?.itemIdentifier,
            );
            expect(at).toBeGreaterThanOrEqual(from);
            from = at;
          }
          expect([...effects].sort((x, y) => x - y)).toEqual(plan.map((_, i) => i));
          for (const key of ["a", "b", "c"]) {
            const ofKey = effects.filter((i) => plan[i]?.key === key);
            expect(ofKey).toEqual([...ofKey].sort((x, y) => x - y));
          }
        }),
        { numRuns: 150 },
      );
    },
  );
});
