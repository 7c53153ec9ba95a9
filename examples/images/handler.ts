import { AsyncLocalStorage } from "node:async_hooks";
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { Context, EventBridgeEvent } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { eventBridgeHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";
import { FencedS3Output } from "./fenced-output.js";
import { invert } from "./pictures.js";

/**
 * Images: S3 → EventBridge → Lambda → output bucket, the AWS Storage Blog sample. The handler reads the
 * uploaded picture, inverts it and writes `out-<key>`. A slow run of an older upload (cat) can finish
 * after the newer one (dog) and overwrite its result.
 */
export interface ImagesConfig {
  s3: S3Client;
  outputBucket: string;
}

type S3ObjectCreated = EventBridgeEvent<string, { bucket: { name: string }; object: { key: string } }>;

export const outputKey = (key: string) => `out-${key}`;

/** The sample with COORDINATION=off: read, invert, (sometimes slow), write. */
export function naiveImagesHandler(config: ImagesConfig) {
  return async (event: S3ObjectCreated): Promise<void> => {
    const { bucket, object } = event.detail;
    const picture = await read(config.s3, bucket.name, object.key);
    const inverted = await invert(picture);
    await faultPoint(); // where the sample sleeps on some runs
    await config.s3.send(
      new PutObjectCommand({
        Bucket: config.outputBucket,
        Key: outputKey(object.key),
        Body: inverted,
        ContentType: "image/png",
      }),
    );
  };
}

export interface GuardedImagesConfig extends ImagesConfig {
  store: StateStore;
  /** Wrapper options besides the store (lease, busy policy, logger, metrics). Default busy: supersede. */
  options?: Omit<EffectivelyOnceOptions, "store">;
}

/**
 * Guard on: events ordered by sequencer per `bucket/key`. A newer upload takes the key from a slow
 * older run at once (busy policy `supersede`); the older run's write is fenced off (see FencedS3Output)
 * and its commit refused; after its commit, a run makes sure no older write landed over its output.
 * A run that crashes holds the key only until its lease expires.
 */
export function guardedImagesHandler(config: GuardedImagesConfig) {
  const output = new FencedS3Output({ s3: config.s3, bucket: config.outputBucket, store: config.store });
  // What each run of this invocation wrote, for the check after the commit (invocations may overlap locally).
  const written = new AsyncLocalStorage<Map<string, Written>>();
  const inner = eventBridgeHandler(
    async (event, ctx) => {
      if (event.kind !== "s3" || event.operation !== "created") return { skipped: true };
      const picture = await read(config.s3, event.bucket, event.key);
      const inverted = await invert(picture);
      await faultPoint();
      const key = outputKey(event.key);
      const status = await output.put(ctx, key, inverted, "image/png");
      const position = ctx.position ?? "";
      written.getStore()?.set(key, { stateKey: ctx.stateKey, position, fence: ctx.fence, body: inverted });
      return { output: key, written: status };
    },
    { busy: "supersede", ...config.options, store: config.store },
  );
  return async (event: EventBridgeEvent<string, unknown>, context: Context) => {
    const runs = new Map<string, Written>();
    const report = await written.run(runs, () => inner(event, context));
    for (const delivery of report.deliveries) {
      for (const e of delivery.events) {
        const key = (e.result as { output?: string } | undefined)?.output;
        const run = key ? runs.get(key) : undefined;
        if (e.status === "processed" && key && run)
          await output.ensure(key, { ...run, contentType: "image/png" });
      }
    }
    return report;
  };
}

interface Written {
  stateKey: string;
  position: string;
  fence: number;
  body: Buffer;
}

async function read(s3: S3Client, bucket: string, key: string): Promise<Buffer> {
  const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  if (!out.Body) throw new Error(`s3://${bucket}/${key} has no body`);
  return Buffer.from(await out.Body.transformToByteArray());
}
