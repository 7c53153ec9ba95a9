import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { EventBridgeEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardedImagesHandler, outputKey } from "../../examples/images/handler.js";
import { classify, pictures } from "../../examples/images/pictures.js";
import { quietObservability } from "../../examples/shared/demo-kit.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { type LocalS3Server, startS3Server } from "../../src/local/emulators/s3-server.js";
import { isObjectReplaced, s3ObjectInput } from "../../src/sources/object-input.js";
import { lambdaContext } from "../kit/context.js";
import { eventBridgeS3 } from "../kit/events.js";

/**
 * The guarded images handler reads the upload its event names. A late run of the cat's event (a retry, or a run
 * that took over a crashed one) after the dog was uploaded must not invert the dog and write it under the cat's
 * position: that is one more write of the output, with other bytes (seen as a duplicate effect in the demo).
 */
describe("images handler: reads the upload its event names", () => {
  let server: LocalS3Server;
  let s3: S3Client;
  beforeAll(async () => {
    server = await startS3Server({ buckets: ["in", "out"] });
    s3 = server.client();
  });
  afterAll(async () => {
    s3?.destroy();
    await server?.stop();
  });

  const upload = async (key: string, body: Buffer) =>
    (await s3.send(new PutObjectCommand({ Bucket: "in", Key: key, Body: body }))).ETag as string;
  const output = async (key: string) => {
    try {
      const out = await s3.send(new GetObjectCommand({ Bucket: "out", Key: outputKey(key) }));
      return classify(Buffer.from(await out.Body!.transformToByteArray()));
    } catch {
      return "missing";
    }
  };
  const handler = () =>
    guardedImagesHandler({
      s3,
      outputBucket: "out",
      store: new MemoryStore(),
      options: { ...quietObservability(), leaseMs: 5_000 },
    }) as unknown as (event: EventBridgeEvent<string, unknown>, context: unknown) => Promise<unknown>;
  const event = (key: string, sequencer: string, etag: string) =>
    eventBridgeS3({ bucket: "in", key, sequencer, etag: etag.replace(/"/g, "") });

  it("the cat's event after the dog's upload writes nothing; the dog's event writes the dog", async () => {
    const { cat, dog } = await pictures();
    const catEtag = await upload("late.png", cat);
    const dogEtag = await upload("late.png", dog);
    const run = handler();
    await run(event("late.png", "0001", catEtag), lambdaContext());
    expect(await output("late.png")).toBe("missing");
    await run(event("late.png", "0002", dogEtag), lambdaContext());
    expect(await output("late.png")).toBe("inverted-dog");
  });

  it("an event whose upload is still there is processed as usual", async () => {
    const { cat } = await pictures();
    const etag = await upload("now.png", cat);
    await handler()(event("now.png", "0001", etag), lambdaContext());
    expect(await output("now.png")).toBe("inverted-cat");
  });

  it("s3ObjectInput: a version id reads that version; otherwise If-Match on the quoted ETag; 412 is 'replaced'", async () => {
    expect(s3ObjectInput({ bucket: "b", key: "k", versionId: "v1", etag: "e" })).toEqual({
      Bucket: "b",
      Key: "k",
      VersionId: "v1",
    });
    expect(s3ObjectInput({ bucket: "b", key: "k", etag: "abc" })).toEqual({
      Bucket: "b",
      Key: "k",
      IfMatch: '"abc"',
    });
    expect(s3ObjectInput({ bucket: "b", key: "k", versionId: "null", etag: '"abc"' }).IfMatch).toBe('"abc"');
    expect(s3ObjectInput({ bucket: "b", key: "k" })).toEqual({ Bucket: "b", Key: "k" });
    const { cat, dog } = await pictures();
    const first = await upload("gone.png", cat);
    await upload("gone.png", dog);
    const error = await s3
      .send(new GetObjectCommand(s3ObjectInput({ bucket: "in", key: "gone.png", etag: first })))
      .catch((e: unknown) => e);
    expect(isObjectReplaced(error)).toBe(true);
    expect(isObjectReplaced(new Error("other"))).toBe(false);
  });
});
