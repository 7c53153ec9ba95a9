/**
 * Fenced S3 output: objects written in position order, whatever the arrival order.
 * @module effectively-once/sinks/s3
 */
import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
} from "@aws-sdk/client-s3";
import { OptionsError, StoreError } from "../core/errors.js";
import { type FenceSource, fencedPosition, type SinkWriteStatus } from "../core/fence.js";
import { requireKeyText } from "../core/key-text.js";
import {
  custom,
  integer,
  oneOf,
  type Resolved,
  required,
  resolveOptions,
  schemaFor,
} from "../core/options.js";
import type { Position } from "../core/position.js";
import { UNORDERED_POSITION } from "../core/state.js";
import { bodyBytes, contentDigest, type S3SinkBody } from "./s3-body.js";

export type { FenceSource, SinkWriteStatus } from "../core/fence.js";
export type { S3SinkBody } from "./s3-body.js";
export { S3SinkBodyTooLargeError } from "./s3-body.js";

const SINK = "S3FencedSink";

/** The options of `S3FencedSink`. */
export interface S3FencedSinkOptions {
  client: S3Client;
  /**
   * An object without the sink's metadata was written by something else. `overwrite` (default): it counts as older
   * than any event, so the first fenced write replaces it. `keep`: it is never overwritten; writes report `stale`.
   */
  unfencedObjects?: "overwrite" | "keep";
  /** Re-reads and new attempts after a 412 or 409 (another writer got in first). Default 5. */
  maxConflictRetries?: number;
  /** First back-off after a conflict, doubled each time with full jitter (capped at 1 s). Default 20. */
  conflictBackoffMs?: number;
  /**
   * The most a stream body (`Readable`, web `ReadableStream`, `Blob`) may hold: the sink reads it into memory once,
   * before its first request, so that every attempt sends the same bytes. Longer: S3SinkBodyTooLargeError, nothing
   * written. Default 16 MiB; at most 4 GiB (Node's largest Buffer; S3's single PUT takes up to 5 GB).
   */
  maxStreamBodyBytes?: number;
}

const MIB = 1024 * 1024;

const S3_SINK_OPTIONS = schemaFor<S3FencedSinkOptions>()({
  client: required(
    custom<S3Client>("an S3Client", (v) => typeof (v as S3Client | null)?.send === "function"),
  ),
  unfencedObjects: oneOf(["overwrite", "keep"], { default: "overwrite" }),
  maxConflictRetries: integer({ min: 0, max: 100, default: 5 }),
  conflictBackoffMs: integer({ min: 1, max: 10_000, default: 20 }),
  maxStreamBodyBytes: integer({ min: 1, max: 4096 * MIB, default: 16 * MIB }),
});

/** User metadata names the sink owns (S3 sends them as `x-amz-meta-eo-*`). */
export const S3_SINK_METADATA = {
  position: "eo-pos",
  fence: "eo-fence",
  deleted: "eo-deleted",
  /** SHA-256 of the content type, user metadata and bytes of a put (see `contentDigest` in src/sinks/s3-body.ts). */
  digest: "eo-digest",
} as const;

/** An object to write: where, its body and content type, your metadata. */
export interface S3SinkObject {
  bucket: string;
  key: string;
  /** Read into memory before the first request (streams up to `maxStreamBodyBytes`): a retry sends it again. */
  body: S3SinkBody;
  contentType?: string;
  /** User metadata, stored as is; names starting with `eo-` belong to the sink. */
  metadata?: Record<string, string>;
}

/** Where an object is: bucket and key. */
export interface S3SinkLocation {
  bucket: string;
  key: string;
}

/** What `read` returns for a live object: its bytes, user metadata and the stamp of the write that made it. */
export interface S3SinkReadResult {
  body: Buffer;
  contentType: string | undefined;
  metadata: Record<string, string>;
  /** Undefined for an object written by something else. */
  stamp: S3SinkStamp | undefined;
}

/** The position and claim fence of the write that made an object. */
export interface S3SinkStamp {
  position: Position;
  fence: number;
}

/** Conflicts kept coming back until `maxConflictRetries` ran out: retryable (the delivery is retried). */
export class S3SinkConflictError extends StoreError {
  readonly bucket: string;
  readonly key: string;
  readonly attempts: number;
  constructor(bucket: string, key: string, attempts: number, options?: { cause?: unknown }) {
    super(`s3://${bucket}/${key} kept changing: ${attempts} conditional writes lost to other writers`, {
      ...options,
      retryable: true,
    });
    this.bucket = bucket;
    this.key = key;
    this.attempts = attempts;
  }
}

/** The object as the decision sees it: its ETag (for If-Match), the stamp and the digest in its metadata. */
interface Current {
  etag: string;
  stamp: (S3SinkStamp & { deleted: boolean }) | undefined;
  digest: string | undefined;
}

interface Attempt {
  /**
   * The stamp to write over `current`; undefined: stale, nothing to write; `present`: this event's bytes are already
   * there (an earlier run of it wrote them, then crashed before its commit), nothing to write again.
   */
  decide(current: Current | undefined): S3SinkStamp | undefined | "present";
  request(stamp: S3SinkStamp): Omit<PutObjectCommandInput, "Bucket" | "Key" | "IfMatch" | "IfNoneMatch">;
}

/**
 * Writes S3 objects so that results land in position order whatever the arrival order. Each write is
 * HEAD (the decision input: the object's ETag and the position and fence in its metadata), then a PutObject
 * conditional on what HEAD saw (`If-None-Match: *` for a new key, `If-Match: <etag>` otherwise). A newer object
 * there (higher position, or the same position from a claim with a higher or equal fence) makes the write `stale`.
 * If another writer got in between (412 PreconditionFailed or 409 ConditionalRequestConflict), it reads again and
 * decides again, up to `maxConflictRetries` times, then throws S3SinkConflictError (retryable).
 *
 * Requests: new key 1 HEAD + 1 PUT; existing key 1 HEAD + 1 PUT; stale 1 HEAD; each conflict one more of each.
 * One key must be written by one subject only: positions are only comparable within a subject.
 *
 * Retries send the same bytes: a body is read into memory before the first request (a stream up to
 * `maxStreamBodyBytes`, else S3SinkBodyTooLargeError), since a stream sent again once drained would store an empty
 * object (a stream is read even when the write turns out `stale`; its own errors are thrown as they are). A put
 * stamps `eo-digest` (SHA-256 of content type, user metadata and bytes), and a write finds its own work from the
 * stamp alone, `applied` with nothing written: a put whose position and digest are there (and, without a position,
 * its fence: the empty position is every such event's), a tombstone whose fence is there. That covers a PUT whose
 * response was lost (the SDK sends it again, and S3 answers 412: the object is no longer the one HEAD saw) and, for
 * a positioned put, a retry after a run crashed past its PUT.
 *
 * Edges, defined as in the DynamoDB sink:
 * - an object without the sink's metadata (written by something else): see `unfencedObjects`;
 * - events without a position, puts and tombstones alike, write the empty position, which every positioned write
 *   overwrites; between two of them the later claim wins.
 *
 * ETags are content hashes (MD5 of the body for single-part uploads without SSE-KMS), so If-Match cannot tell two
 * objects with the same bytes apart: if between this write's HEAD and PUT another writer replaces the object with
 * a newer one whose body is byte-identical to the one HEAD saw (a rerun of an event without a position rewrites
 * its bytes), this older write still lands. Tombstones carry their stamp in their body so that they never share an
 * ETag.
 */
export class S3FencedSink {
  /** The options, checked, with their defaults. */
  readonly #o: Resolved<typeof S3_SINK_OPTIONS>;

  constructor(options: S3FencedSinkOptions) {
    this.#o = resolveOptions(SINK, S3_SINK_OPTIONS, options);
  }

  /**
   * A fenced PutObject. `stale` when the key already holds newer work (nothing is written). The body is read into
   * memory first (streams up to `maxStreamBodyBytes`), so that every attempt sends the same bytes.
   */
  async put(ctx: FenceSource, object: S3SinkObject): Promise<SinkWriteStatus> {
    const mine = stampOf(ctx);
    const metadata = userMetadata(object.metadata);
    const target = { bucket: object.bucket, key: object.key, limitBytes: this.#o.maxStreamBodyBytes };
    const body = await bodyBytes(object.body, target);
    const digest = contentDigest(body, object.contentType, metadata);
    return this.#write(object, {
      decide: (current) => {
        const stamp = current?.stamp;
        const same =
          stamp && !stamp.deleted && stamp.position === mine.position && current?.digest === digest;
        // What this write would write is there: its own after a lost response (S3 answered the SDK's resend 412),
        // or, for a positioned event, an earlier run's. Events without a position share the empty one: a rerun
        // leaving an earlier claim's fence would let another event's older claim replace it.
        if (same && (mine.position !== UNORDERED_POSITION || stamp.fence === mine.fence)) return "present";
        return this.#older(current, mine) ? mine : undefined;
      },
      request: (stamp) => ({
        Body: body,
        ContentType: object.contentType,
        Metadata: { ...metadata, ...stampMetadata(stamp), [S3_SINK_METADATA.digest]: digest },
      }),
    });
  }

  /**
   * For a removal event: a tombstone object (metadata `eo-deleted: true` and the stamp), so that an older create
   * arriving late cannot resurrect the key (a DeleteObject would forget the position). Readers must treat an
   * object with `x-amz-meta-eo-deleted: true` as absent: `read` returns undefined for it; listings still show it.
   */
  async tombstone(ctx: FenceSource, location: S3SinkLocation): Promise<SinkWriteStatus> {
    const mine = stampOf(ctx);
    return this.#write(location, {
      decide: (current) => {
        const stamp = current?.stamp;
        // This claim's tombstone is there: its own, after a lost response (a fence belongs to one claim).
        if (stamp?.deleted && stamp.fence === mine.fence && stamp.position === mine.position)
          return "present";
        // The one rule, as for puts: without a position, the empty position.
        return this.#older(current, mine) ? mine : undefined;
      },
      request: (stamp) => ({
        Body: JSON.stringify({ deleted: true, ...stamp }),
        ContentType: "application/json",
        Metadata: { ...stampMetadata(stamp), [S3_SINK_METADATA.deleted]: "true" },
      }),
    });
  }

  /** The object's bytes and metadata; undefined when there is none or it is a tombstone. */
  async read(location: S3SinkLocation): Promise<S3SinkReadResult | undefined> {
    let out: GetObjectCommandOutput;
    try {
      out = await this.#o.client.send(new GetObjectCommand({ Bucket: location.bucket, Key: location.key }));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw new StoreError(`read of s3://${location.bucket}/${location.key} failed`, { cause: error });
    }
    const all = out.Metadata ?? {};
    if (all[S3_SINK_METADATA.deleted] === "true") return undefined;
    const stamp = stampFrom(all);
    const metadata = Object.fromEntries(Object.entries(all).filter(([name]) => !name.startsWith("eo-")));
    const body = Buffer.from((await out.Body?.transformToByteArray()) ?? []);
    return { body, contentType: out.ContentType, metadata, stamp };
  }

  /** HEAD, decide, conditional PUT; again after a conflict, with back-off. */
  async #write(location: S3SinkLocation, attempt: Attempt): Promise<SinkWriteStatus> {
    const { bucket, key } = location;
    requireKeyText("sink key", key);
    let lastConflict: unknown;
    for (let tries = 0; tries <= this.#o.maxConflictRetries; tries++) {
      if (tries > 0) await sleep(backoff(this.#o.conflictBackoffMs, tries));
      const current = await this.#head(bucket, key);
      const stamp = attempt.decide(current);
      if (!stamp) return "stale";
      if (stamp === "present") return "applied";
      const condition = current ? { IfMatch: current.etag } : { IfNoneMatch: "*" };
      try {
        await this.#o.client.send(
          new PutObjectCommand({ ...attempt.request(stamp), Bucket: bucket, Key: key, ...condition }),
        );
        return "applied";
      } catch (error) {
        if (!isConflict(error)) {
          throw new StoreError(`fenced put to s3://${bucket}/${key} failed`, { cause: error });
        }
        lastConflict = error;
      }
    }
    throw new S3SinkConflictError(bucket, key, this.#o.maxConflictRetries + 1, { cause: lastConflict });
  }

  async #head(bucket: string, key: string): Promise<Current | undefined> {
    try {
      const head = await this.#o.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      if (!head.ETag) throw new Error("HeadObject returned no ETag");
      const metadata = head.Metadata ?? {};
      const stamp = stampFrom(metadata);
      return {
        etag: head.ETag,
        stamp: stamp && { ...stamp, deleted: metadata[S3_SINK_METADATA.deleted] === "true" },
        digest: metadata[S3_SINK_METADATA.digest],
      };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw new StoreError(`fenced read of s3://${bucket}/${key} failed`, { cause: error });
    }
  }

  /** Whether `current` holds older work than `mine` (so `mine` may replace it). */
  #older(current: Current | undefined, mine: S3SinkStamp): boolean {
    if (!current) return true;
    if (!current.stamp) return this.#o.unfencedObjects === "overwrite";
    const { position, fence } = current.stamp;
    return position < mine.position || (position === mine.position && fence < mine.fence);
  }
}

/** The stamp a write carries, after checking the context: a valid position (or none) and a real fence. */
function stampOf(ctx: FenceSource): S3SinkStamp {
  return { position: fencedPosition(SINK, ctx), fence: ctx.fence };
}

/**
 * Positions are printable ASCII, but HTTP trims a header value's spaces: percent-encoded they survive. An
 * unordered write (empty position) has no `eo-pos` at all rather than an empty header.
 */
function stampMetadata(stamp: S3SinkStamp): Record<string, string> {
  const fence = { [S3_SINK_METADATA.fence]: String(stamp.fence) };
  if (stamp.position === UNORDERED_POSITION) return fence;
  return { ...fence, [S3_SINK_METADATA.position]: encodeURIComponent(stamp.position) };
}

/** The stamp in an object's metadata; undefined when the sink did not write it (no valid fence). */
function stampFrom(metadata: Record<string, string>): S3SinkStamp | undefined {
  const fence = Number(metadata[S3_SINK_METADATA.fence]);
  if (!Number.isSafeInteger(fence) || fence <= 0) return undefined;
  const encoded = metadata[S3_SINK_METADATA.position];
  try {
    return { position: encoded === undefined ? UNORDERED_POSITION : decodeURIComponent(encoded), fence };
  } catch {
    return undefined;
  }
}

function userMetadata(metadata: Record<string, string> | undefined): Record<string, string> {
  for (const name of Object.keys(metadata ?? {})) {
    if (name.toLowerCase().startsWith("eo-")) {
      throw new OptionsError(`${SINK}: metadata names starting with "eo-" belong to the sink, got ${name}`);
    }
  }
  return metadata ?? {};
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  return statusOf(error) === 404 || (error instanceof Error && /^(NotFound|NoSuchKey)$/.test(error.name));
}

/**
 * 412: the object is not the one HEAD saw. 409: another write landed during ours. A 404 on If-Match (the object
 * was deleted since HEAD) is read the same way: the decision input changed, read again.
 */
function isConflict(error: unknown): boolean {
  const name = error instanceof Error ? error.name : "";
  if (name === "PreconditionFailed" || name === "ConditionalRequestConflict") return true;
  const status = statusOf(error);
  return status === 412 || status === 409 || (status === 404 && name === "NoSuchKey");
}

/** Full jitter: anywhere up to base·2^(try-1), capped at a second. */
function backoff(baseMs: number, tries: number): number {
  return Math.random() * Math.min(1000, baseMs * 2 ** (tries - 1));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
