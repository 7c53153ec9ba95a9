import { createHash } from "node:crypto";
import type { PutObjectCommandInput } from "@aws-sdk/client-s3";
import { EffectivelyOnceError, OptionsError } from "../core/errors.js";

/**
 * Bodies of the S3 fenced sink (src/sinks/s3.ts). A conditional write may be sent more than once (after a 412 or 409
 * the sink writes again; after a lost response the SDK does), and a stream can be read only once: sent again, a
 * drained stream stores an empty object. So every body is held in memory before the first request and each attempt
 * sends the same bytes.
 */

export type S3SinkBody = PutObjectCommandInput["Body"];

/** A stream body longer than the sink's `maxStreamBodyBytes`: it is not written (nothing was sent). */
export class S3SinkBodyTooLargeError extends EffectivelyOnceError {
  readonly bucket: string;
  readonly key: string;
  readonly limitBytes: number;
  constructor(bucket: string, key: string, limitBytes: number) {
    super(
      `the body for s3://${bucket}/${key} is longer than maxStreamBodyBytes (${limitBytes}): ` +
        "the sink holds a body in memory so that a retry sends the same bytes",
    );
    this.bucket = bucket;
    this.key = key;
    this.limitBytes = limitBytes;
  }
}

/** Where the body goes, and the most a stream may hold. */
export interface BodyTarget {
  bucket: string;
  key: string;
  limitBytes: number;
}

/**
 * The body's bytes, read once: strings (UTF-8) and byte arrays as they are; streams (Node `Readable`, web
 * `ReadableStream`, any async iterable of bytes) and `Blob`s up to `limitBytes`, else S3SinkBodyTooLargeError. A
 * stream's own error is thrown as it is.
 */
export async function bodyBytes(body: S3SinkBody, target: BodyTarget): Promise<Buffer> {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === "string") return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof Blob !== "undefined" && body instanceof Blob) {
    if (body.size > target.limitBytes) throw tooLarge(target);
    return Buffer.from(await body.arrayBuffer());
  }
  const iterable = body as Partial<AsyncIterable<unknown>>;
  if (typeof iterable[Symbol.asyncIterator] !== "function") {
    throw new OptionsError(
      `S3FencedSink: a body must be a string, bytes, a stream or a Blob, got ${typeof body}`,
    );
  }
  return readBounded(iterable as AsyncIterable<unknown>, target);
}

/** Leaving the loop early (too long, a bad chunk) ends the iteration, which destroys or cancels the stream. */
async function readBounded(stream: AsyncIterable<unknown>, target: BodyTarget): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let lengthBytes = 0;
  for await (const chunk of stream) {
    let bytes: Buffer;
    if (typeof chunk === "string") bytes = Buffer.from(chunk);
    else if (chunk instanceof Uint8Array)
      bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    else
      throw new OptionsError(`S3FencedSink: a stream body must yield bytes or strings, got ${typeof chunk}`);
    lengthBytes += bytes.length;
    if (lengthBytes > target.limitBytes) throw tooLarge(target);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, lengthBytes);
}

function tooLarge(target: BodyTarget): S3SinkBodyTooLargeError {
  return new S3SinkBodyTooLargeError(target.bucket, target.key, target.limitBytes);
}

/**
 * What the sink stamps as `eo-digest`: SHA-256 (base64url) of the content type, the user metadata and the bytes, so
 * that an object holding exactly what a write would write is recognised from its metadata alone, whatever the body
 * was (an ETag is the MD5 of the bytes only for single-part uploads without SSE-KMS).
 */
export function contentDigest(
  bytes: Uint8Array,
  contentType: string | undefined,
  metadata: Record<string, string>,
): string {
  const fields = Object.entries(metadata)
    .map(([name, value]): [string, string] => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // JSON never holds a raw NUL, so the header cannot run into the bytes.
  return createHash("sha256")
    .update(JSON.stringify([contentType ?? null, fields]))
    .update("\0")
    .update(bytes)
    .digest("base64url");
}
