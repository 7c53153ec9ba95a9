import { randomUUID } from "node:crypto";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OptionsError, StoreError } from "../../src/core/errors.js";
import { positionFromNumber } from "../../src/core/position.js";
import { type LocalS3Server, startS3Server } from "../../src/local/emulators/s3-server.js";
import { S3FencedSink, S3SinkConflictError } from "../../src/sinks/s3.js";

/** The S3 fenced sink (src/sinks/s3.ts) against s3rver behind the local conditional-writes layer. */
describe("S3FencedSink", () => {
  const bucket = "sink";
  let server: LocalS3Server;
  let s3: S3Client;
  let sink: S3FencedSink;
  /** Lands between a conditional write's check and its write when set (the server's test hook). */
  let intrude: ((key: string) => Promise<void>) | undefined;
  const p = positionFromNumber;
  const ctx = (position: string | undefined, fence: number) => ({ position, fence });
  const newKey = () => `out/${randomUUID()}`;

  beforeAll(async () => {
    server = await startS3Server({
      buckets: [bucket],
      conditionalWrites: { beforeConditionalWrite: async (_b, key) => intrude?.(key) },
    });
    s3 = server.client();
    sink = new S3FencedSink({ client: s3 });
  });
  afterAll(async () => {
    s3?.destroy();
    await server?.stop();
  });
  beforeEach(() => {
    intrude = undefined;
  });

  const text = async (key: string) => (await sink.read({ bucket, key }))?.body.toString();
  const put = (key: string, position: string | undefined, fence: number, body = `${position}/${fence}`) =>
    sink.put(ctx(position, fence), { bucket, key, body });

  /** A sink on its own client that records the command of every request it sends. */
  function countingSink(options: { maxConflictRetries?: number } = {}) {
    const client = server.client();
    const sent: string[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(String(context.commandName).replace(/Command$/, ""));
        return next(args);
      },
      { step: "initialize" },
    );
    return { sink: new S3FencedSink({ client, conflictBackoffMs: 1, ...options }), sent, client };
  }

  it("requests per outcome: new key HEAD+PUT, newer over older HEAD+PUT, stale HEAD only", async () => {
    const { sink: counted, sent, client } = countingSink();
    const key = newKey();
    const write = async (position: string, fence: number) => {
      sent.length = 0;
      const status = await counted.put(ctx(position, fence), { bucket, key, body: position });
      return { status, sent: [...sent] };
    };
    expect(await write(p(2), 1)).toEqual({ status: "applied", sent: ["HeadObject", "PutObject"] });
    expect(await write(p(3), 1)).toEqual({ status: "applied", sent: ["HeadObject", "PutObject"] });
    expect(await write(p(1), 9)).toEqual({ status: "stale", sent: ["HeadObject"] });
    client.destroy();
  });

  it("keeps content type and user metadata, and stamps position and fence in eo-* metadata", async () => {
    const key = newKey();
    const position = " spaced position ";
    await sink.put(ctx(position, 7), {
      bucket,
      key,
      body: "hello",
      contentType: "text/plain",
      metadata: { owner: "images" },
    });
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.ContentType).toBe("text/plain");
    expect(head.Metadata).toMatchObject({ owner: "images", "eo-fence": "7" });
    expect(await sink.read({ bucket, key })).toEqual({
      body: Buffer.from("hello"),
      contentType: "text/plain",
      metadata: { owner: "images" },
      stamp: { position, fence: 7 },
    });
  });

  it("a retry of an event whose crashed run already wrote the same bytes: applied, with no second PUT", async () => {
    const { sink: counted, sent, client } = countingSink();
    const key = newKey();
    expect(await counted.put(ctx(p(4), 1), { bucket, key, body: "thumbnail" })).toBe("applied");
    sent.length = 0;
    expect(await counted.put(ctx(p(4), 2), { bucket, key, body: "thumbnail" })).toBe("applied");
    expect(sent).toEqual(["HeadObject"]); // the bytes of this position are there: nothing to write again
    expect(await counted.put(ctx(p(4), 3), { bucket, key, body: "other bytes" })).toBe("applied");
    expect(await text(key)).toBe("other bytes"); // other bytes at the same position: the later claim wins
    client.destroy();
  });

  it("same position: a higher fence replaces, an equal or lower fence is stale", async () => {
    const key = newKey();
    expect(await put(key, p(5), 3, "first")).toBe("applied");
    expect(await put(key, p(5), 3, "same fence")).toBe("stale");
    expect(await put(key, p(5), 2, "older claim")).toBe("stale");
    expect(await put(key, p(5), 4, "later claim")).toBe("applied");
    expect(await text(key)).toBe("later claim");
  });

  it("an object written by something else is overwritten by default, kept with unfencedObjects: keep", async () => {
    const keep = new S3FencedSink({ client: s3, unfencedObjects: "keep" });
    const a = newKey();
    const b = newKey();
    for (const key of [a, b])
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "backfill" }));
    expect(await put(a, p(1), 1, "event")).toBe("applied");
    expect(await text(a)).toBe("event");
    expect(await keep.put(ctx(p(1), 1), { bucket, key: b, body: "event" })).toBe("stale");
    expect(await keep.tombstone(ctx(p(1), 1), { bucket, key: b })).toBe("stale");
    expect(await text(b)).toBe("backfill");
    expect((await sink.read({ bucket, key: b }))?.stamp).toBeUndefined();
  });

  it("events without a position: the later claim wins, and any positioned write wins over them", async () => {
    const key = newKey();
    expect(await put(key, undefined, 5, "unordered 5")).toBe("applied");
    expect(await put(key, undefined, 4, "unordered 4")).toBe("stale");
    expect(await put(key, undefined, 6, "unordered 6")).toBe("applied");
    expect(await put(key, p(0), 1, "positioned")).toBe("applied");
    expect(await put(key, undefined, 99, "unordered 99")).toBe("stale");
    expect(await text(key)).toBe("positioned");
  });

  it("a tombstone keeps its position: read says undefined, older creates stay out, newer get in", async () => {
    const key = newKey();
    await put(key, p(1), 1, "created");
    expect(await sink.tombstone(ctx(p(3), 1), { bucket, key })).toBe("applied");
    expect(await sink.read({ bucket, key })).toBeUndefined();
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.Metadata).toMatchObject({ "eo-deleted": "true", "eo-fence": "1" });
    expect(await put(key, p(2), 9, "late older create")).toBe("stale");
    expect(await sink.tombstone(ctx(p(2), 9), { bucket, key })).toBe("stale");
    expect(await put(key, p(4), 1, "newer create")).toBe("applied");
    expect(await text(key)).toBe("newer create");
  });

  it("tombstones of different positions have different ETags (If-Match tells them apart)", async () => {
    const [a, b] = [newKey(), newKey()];
    await sink.tombstone(ctx(p(1), 1), { bucket, key: a });
    await sink.tombstone(ctx(p(2), 1), { bucket, key: b });
    const etag = async (key: string) =>
      (await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag;
    expect(await etag(a)).not.toBe(await etag(b));
  });

  it("a tombstone without a position deletes where it stands: keeps the position, takes its fence", async () => {
    const key = newKey();
    await put(key, p(5), 2, "created");
    expect(await sink.tombstone(ctx(undefined, 1), { bucket, key })).toBe("stale");
    expect(await sink.tombstone(ctx(undefined, 3), { bucket, key })).toBe("applied");
    expect(await sink.read({ bucket, key })).toBeUndefined();
    expect(await put(key, p(4), 9, "older")).toBe("stale");
    expect(await put(key, p(6), 1, "newer")).toBe("applied");
    const missing = newKey();
    expect(await sink.tombstone(ctx(undefined, 1), { bucket, key: missing })).toBe("applied");
    expect(await put(missing, p(0), 1, "any positioned")).toBe("applied");
  });

  it("after a conflict it reads again and decides again: applied if still newer, stale if not", async () => {
    const { sink: counted, sent, client } = countingSink();
    const key = newKey();
    await put(key, p(1), 1, "first");
    intrude = async (k) => {
      intrude = undefined;
      await put(k, p(2), 1, "intruder");
    };
    expect(await counted.put(ctx(p(3), 1), { bucket, key, body: "mine" })).toBe("applied");
    expect(sent).toEqual(["HeadObject", "PutObject", "HeadObject", "PutObject"]);
    expect(await text(key)).toBe("mine");
    intrude = async (k) => {
      intrude = undefined;
      await put(k, p(9), 1, "newer intruder");
    };
    sent.length = 0;
    expect(await counted.put(ctx(p(4), 1), { bucket, key, body: "late" })).toBe("stale");
    expect(sent).toEqual(["HeadObject", "PutObject", "HeadObject"]);
    expect(await text(key)).toBe("newer intruder");
    client.destroy();
  });

  it("conflicts past maxConflictRetries: S3SinkConflictError, retryable, with the last conflict as cause", async () => {
    const { sink: counted, sent, client } = countingSink({ maxConflictRetries: 2 });
    const key = newKey();
    let n = 0;
    intrude = async (k) => {
      const again = intrude;
      intrude = undefined;
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `intruder ${n++}` }));
      intrude = again;
    };
    const error = await counted.put(ctx(p(1), 1), { bucket, key, body: "mine" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(S3SinkConflictError);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ retryable: true, attempts: 3, bucket, key });
    expect((error as Error).cause).toMatchObject({ name: "ConditionalRequestConflict" });
    expect(sent.filter((c) => c === "PutObject")).toHaveLength(3);
    client.destroy();
  });

  it("other failures are StoreErrors with the SDK error as cause", async () => {
    const error = await sink
      .put(ctx(p(1), 1), { bucket: "no-such-bucket", key: "k", body: "x" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).not.toBeInstanceOf(S3SinkConflictError);
    expect((error as Error).cause).toMatchObject({ name: "NoSuchBucket" });
  });

  it("refuses bad options, a write without a real fence, a bad position, and eo-* user metadata", async () => {
    expect(() => new S3FencedSink({ client: s3, maxConflictRetries: -1 })).toThrow(OptionsError);
    expect(() => new S3FencedSink({ client: s3, unfencedObjects: "drop" as "keep" })).toThrow(OptionsError);
    expect(() => new S3FencedSink({ client: {} as S3Client })).toThrow(/client must be an S3Client/);
    const key = newKey();
    await expect(put(key, p(1), 0)).rejects.toThrow(OptionsError);
    await expect(put(key, "caf\u00e9", 1)).rejects.toThrow(/printable ASCII/);
    await expect(
      sink.put(ctx(p(1), 1), { bucket, key, body: "x", metadata: { "EO-pos": "z" } }),
    ).rejects.toThrow(/belong to the sink/);
  });

  it("16 writers with shuffled positions on one key: the highest position's body stays", async () => {
    const key = newKey();
    const busy = new S3FencedSink({ client: s3, maxConflictRetries: 40, conflictBackoffMs: 2 });
    const positions = fc.sample(fc.shuffledSubarray([...Array(16).keys()], { minLength: 16 }), {
      numRuns: 1,
      seed: 16,
    })[0] as number[];
    const statuses = await Promise.all(
      positions.map((i) => busy.put(ctx(p(i), 1), { bucket, key, body: `writer ${i}` })),
    );
    expect(await text(key)).toBe("writer 15");
    expect(statuses[positions.indexOf(15)]).toBe("applied");
    const stale = statuses.filter((s) => s === "stale").length;
    expect(stale).toBeGreaterThan(0);
    const raw = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(raw.Metadata).toMatchObject({ "eo-pos": p(15), "eo-fence": "1" });
  });

  it("property: any arrival order with duplicated deliveries leaves the newest (position, fence)", async () => {
    const busy = new S3FencedSink({ client: s3, maxConflictRetries: 40, conflictBackoffMs: 2 });
    const delivery = fc.record({
      position: fc.integer({ min: 0, max: 5 }),
      fence: fc.integer({ min: 1, max: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(delivery, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 2 }),
        fc.integer({ min: 1, max: 5 }),
        async (unique, copies, width) => {
          const key = newKey();
          // Every delivery arrives `copies` times; the order is the array's, in waves of `width` at once.
          const arrivals = unique.flatMap((d) => Array.from({ length: copies }, () => d));
          for (let i = 0; i < arrivals.length; i += width) {
            await Promise.all(
              arrivals
                .slice(i, i + width)
                .map((d) =>
                  busy.put(ctx(p(d.position), d.fence), { bucket, key, body: `${d.position}/${d.fence}` }),
                ),
            );
          }
          const newest = [...unique].sort((a, b) => b.position - a.position || b.fence - a.fence)[0]!;
          expect(await text(key)).toBe(`${newest.position}/${newest.fence}`);
          expect((await sink.read({ bucket, key }))?.stamp).toEqual({
            position: p(newest.position),
            fence: newest.fence,
          });
        },
      ),
      { numRuns: 25, seed: 7 },
    );
  });
});
