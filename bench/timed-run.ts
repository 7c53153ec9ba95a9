import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { CpuMeter } from "./cpu.js";
import { makeEvent } from "./events.js";
import type { Implementation } from "./impls/types.js";
import { deliverAll } from "./runner.js";

/**
 * One measured run of the development scripts (bench/ratio.ts, bench/profile.ts): `count` new events of distinct
 * keys through a fresh instance of `impl`, `workers` at a time, with the CPU both processes used meanwhile.
 */
export async function timedRun(
  impl: Implementation,
  o: { client: DynamoDBClient; cpu: CpuMeter; workers: number; count: number; tag: string; prefix: string },
): Promise<{ elapsedMs: number; clientMs: number; serverMs: number | undefined }> {
  const instance = await impl.open({ client: o.client, prefix: o.prefix });
  const deliveries = Array.from({ length: o.count }, (_, i) => ({
    event: makeEvent(`${o.tag}-${i}`, 1),
    plans: [{ workMs: 0 }],
  }));
  o.cpu.start();
  const result = await deliverAll(instance, deliveries, {
    workers: o.workers,
    redeliveryDelayMs: 250,
    maxDeliveries: 100,
  });
  const used = o.cpu.read();
  await instance.close();
  return { elapsedMs: result.elapsedMs, ...used };
}
