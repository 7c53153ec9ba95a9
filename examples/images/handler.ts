import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { EventBridgeEvent } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { eventBridgeHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";
import { S3FencedSink } from "../../src/sinks/s3.js";
import { isObjectReplaced, s3ObjectInput } from "../../src/sources/object-input.js";
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
    const picture = await readObject(config.s3, { Bucket: bucket.name, Key: object.key });
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
 * older run at once (busy policy `supersede`); the output goes through the S3 fenced sink, so the older
 * run's late write is `stale` (its position is older) and its commit refused. A run that crashes holds
 * the key only until its lease expires; a run that took over from it writes with a higher fence. It reads the
 * upload its event names (`s3ObjectInput`: If-Match on the event's ETag): a retry of the cat's event that ran after
 * the dog was uploaded would otherwise invert the dog and write it once more under the cat's position.
 */
export function guardedImagesHandler(config: GuardedImagesConfig) {
  const sink = new S3FencedSink({ client: config.s3 });
  return eventBridgeHandler(
    async (event, ctx) => {
      if (event.kind !== "s3" || event.operation !== "created") return { skipped: true };
      let picture: Buffer;
      try {
        picture = await readObject(config.s3, s3ObjectInput(event));
      } catch (error) {
        // Replaced by a newer upload since this event: that upload's own event writes the result.
        if (isObjectReplaced(error)) return { skipped: "replaced" };
        throw error;
      }
      const inverted = await invert(picture);
      await faultPoint();
      const key = outputKey(event.key);
      const written = await sink.put(ctx, {
        bucket: config.outputBucket,
        key,
        body: inverted,
        contentType: "image/png",
      });
      return { output: key, written };
    },
    { busy: "supersede", ...config.options, store: config.store },
  );
}

async function readObject(
  s3: S3Client,
  input: { Bucket: string; Key: string; IfMatch?: string },
): Promise<Buffer> {
  const out = await s3.send(new GetObjectCommand(input));
  if (!out.Body) throw new Error(`s3://${input.Bucket}/${input.Key} has no body`);
  return Buffer.from(await out.Body.transformToByteArray());
}
