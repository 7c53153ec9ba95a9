import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type S3rver from "s3rver";

/**
 * s3rver's filesystem store answers a PutObject before the body is on disk: its `putObject` resolves when its
 * hashing stream has finished (for a buffer, right after `end()`), not when the file stream has flushed. A
 * GetObject sent after the PutObject's response could then read an empty or partial file: a read-after-write
 * failure S3 does not have. Under load it showed as a fenced S3 write reported applied whose object still read
 * as the tombstone before it. This `putObject` resolves once the file is written, then writes the metadata, as
 * s3rver's does.
 */
export function makePutObjectDurable(store: S3rver.FilesystemStore): void {
  store.putObject = async (object) => {
    const objectPath = store.getResourcePath(object.bucket, object.key, "object");
    await mkdir(dirname(objectPath), { recursive: true });
    const md5 = createHash("md5");
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        md5.update(chunk);
        size += chunk.length;
        callback(null, chunk);
      },
    });
    const source = Buffer.isBuffer(object.content)
      ? Readable.from([object.content], { objectMode: false })
      : object.content;
    await pipeline(source, measure, createWriteStream(objectPath));
    const digest = md5.digest("hex");
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
}
