import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type LocalS3Server, startS3Server } from "../../src/local/emulators/s3-server.js";

/** The local S3's conditional writes (src/local/emulators/s3-conditional.ts), through the SDK, on s3rver. */
describe("local S3 conditional writes", () => {
  const bucket = "conditional";
  let server: LocalS3Server;
  let s3: S3Client;
  /** Runs between a conditional request's arrival check and its write, when set. */
  let between: ((key: string) => Promise<void>) | undefined;
  let n = 0;
  let key: string;

  beforeAll(async () => {
    server = await startS3Server({
      buckets: [bucket],
      conditionalWrites: { beforeConditionalWrite: async (_bucket, k) => between?.(k) },
    });
    s3 = server.client();
  });

  afterAll(async () => {
    s3?.destroy();
    await server?.stop();
  });

  beforeEach(() => {
    between = undefined;
    key = `k${n++}.txt`;
  });

  const put = (body: string, conditions: { IfNoneMatch?: string; IfMatch?: string } = {}) =>
    s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...conditions }));
  const body = async () =>
    (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();

  it("is bound to 127.0.0.1", () => {
    expect(server.address).toBe("127.0.0.1");
  });

  it("If-None-Match: * creates a new key, and its ETag is the one HEAD then reports", async () => {
    const created = await put("one", { IfNoneMatch: "*" });
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(created.ETag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(head.ETag).toBe(created.ETag);
    expect(await body()).toBe("one");
  });

  it("If-None-Match: * on an existing key: 412 PreconditionFailed, nothing written", async () => {
    await put("one");
    const error = await put("two", { IfNoneMatch: "*" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "PreconditionFailed", $metadata: { httpStatusCode: 412 } });
    expect(await body()).toBe("one");
  });

  it("If-None-Match with an ETag: 501 NotImplemented (S3 accepts only *)", async () => {
    const first = await put("one");
    await expect(put("two", { IfNoneMatch: first.ETag! })).rejects.toMatchObject({
      name: "NotImplemented",
      $metadata: { httpStatusCode: 501 },
    });
    expect(await body()).toBe("one");
  });

  it("GetObject and HeadObject with If-Match: the object when the ETag matches, 412 once it was replaced", async () => {
    const first = await put("one");
    const read = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, IfMatch: first.ETag! }));
    expect(await read.Body!.transformToString()).toBe("one");
    await put("two");
    for (const command of [
      new GetObjectCommand({ Bucket: bucket, Key: key, IfMatch: first.ETag! }),
      new HeadObjectCommand({ Bucket: bucket, Key: key, IfMatch: first.ETag! }),
    ]) {
      const error = await s3.send(command as GetObjectCommand).catch((e: unknown) => e);
      expect(error).toMatchObject({ $metadata: { httpStatusCode: 412 } });
    }
    expect(await body()).toBe("two");
  });

  it("GetObject with If-None-Match: 304 when the ETag matches, the object when it does not", async () => {
    const first = await put("one");
    const error = await s3
      .send(new GetObjectCommand({ Bucket: bucket, Key: key, IfNoneMatch: first.ETag! }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ $metadata: { httpStatusCode: 304 } });
    const other = await s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, IfNoneMatch: '"0123456789abcdef0123456789abcdef"' }),
    );
    expect(await other.Body!.transformToString()).toBe("one");
  });

  it("If-Match with the current ETag replaces the object; the response carries the new ETag", async () => {
    const first = await put("one");
    const second = await put("two", { IfMatch: first.ETag! });
    expect(second.ETag).not.toBe(first.ETag);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.ETag).toBe(second.ETag);
    expect(await body()).toBe("two");
  });

  it("If-Match with another ETag, or on a missing key: 412 PreconditionFailed", async () => {
    await expect(put("zero", { IfMatch: '"0123456789abcdef0123456789abcdef"' })).rejects.toMatchObject({
      name: "PreconditionFailed",
      $metadata: { httpStatusCode: 412 },
    });
    const first = await put("one");
    await put("two", { IfMatch: first.ETag! });
    await expect(put("three", { IfMatch: first.ETag! })).rejects.toMatchObject({
      name: "PreconditionFailed",
    });
    expect(await body()).toBe("two");
  });

  it("If-Match after a delete: 412", async () => {
    const first = await put("one");
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    await expect(put("two", { IfMatch: first.ETag! })).rejects.toMatchObject({ name: "PreconditionFailed" });
  });

  it("a write landing between the check and the write: 409 ConditionalRequestConflict, nothing written", async () => {
    const first = await put("one");
    between = async (k) => {
      between = undefined; // the intruder's own write must not recurse
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: "intruder" }));
    };
    await expect(put("two", { IfMatch: first.ETag! })).rejects.toMatchObject({
      name: "ConditionalRequestConflict",
      $metadata: { httpStatusCode: 409 },
    });
    expect(await body()).toBe("intruder");
  });

  it("a create landing between the check and an If-None-Match write: 409", async () => {
    between = async (k) => {
      between = undefined;
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: "intruder" }));
    };
    await expect(put("mine", { IfNoneMatch: "*" })).rejects.toMatchObject({
      name: "ConditionalRequestConflict",
    });
    expect(await body()).toBe("intruder");
  });

  it("concurrent creates of one key: exactly one wins, the others get 412 or 409", async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => put(`writer ${i}`, { IfNoneMatch: "*" })),
    );
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
    expect(won).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") {
        expect(["PreconditionFailed", "ConditionalRequestConflict"]).toContain((r.reason as Error).name);
      }
    }
    expect(await body()).toBe(`writer ${won[0]}`);
  });

  it("keys with spaces and slashes are checked as the same key s3rver stores", async () => {
    key = `dir/with space/${key}`;
    await put("one", { IfNoneMatch: "*" });
    await expect(put("two", { IfNoneMatch: "*" })).rejects.toMatchObject({ name: "PreconditionFailed" });
    expect(await body()).toBe("one");
  });
});
