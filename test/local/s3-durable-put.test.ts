import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import type S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makePutObjectDurable } from "../../src/local/emulators/s3-durable-put.js";

/**
 * The local S3 reads what a PutObject wrote as soon as the PutObject has answered (s3rver's own store answered
 * before the body was on disk). Checked on the store itself: a body large enough that writing it takes longer
 * than writing the metadata file, read back the moment `putObject` resolves.
 */
const FilesystemStore = createRequire(import.meta.url)("s3rver/lib/stores/filesystem.js") as new (
  directory: string,
) => S3rver.FilesystemStore;

const MIB = 1024 * 1024;
const body = Buffer.alloc(48 * MIB, "eonce");
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

describe("local S3: PutObject is durable when it answers", () => {
  let directory: string;
  let store: S3rver.FilesystemStore;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "eonce-s3-durable-"));
    store = new FilesystemStore(directory);
    makePutObjectDurable(store);
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  const readBack = (key: string) => readFile(store.getResourcePath("b", key, "object"));

  it("a buffer body is whole on disk when putObject resolves, with its size and MD5", async () => {
    // Several times: before the fix, one write in a few happened to finish before the metadata file's.
    for (const key of ["buffer-1.bin", "buffer-2.bin", "buffer-3.bin"]) {
      const written = await store.putObject({ bucket: "b", key, content: body, metadata: {} });
      const onDisk = await readBack(key);
      expect(onDisk.length, key).toBe(body.length);
      expect(md5(onDisk)).toBe(md5(body));
      expect(written).toEqual({ size: body.length, md5: md5(body) });
    }
  });

  it("a stream body too", async () => {
    const chunks = Array.from({ length: 48 }, (_, i) => body.subarray(i * MIB, (i + 1) * MIB));
    const written = await store.putObject({
      bucket: "b",
      key: "stream.bin",
      content: Readable.from(chunks, { objectMode: false }),
      metadata: { "content-type": "application/octet-stream" },
    });
    const onDisk = await readBack("stream.bin");
    expect(onDisk.length).toBe(body.length);
    expect(written).toEqual({ size: body.length, md5: md5(body) });
  });
});
