import { HeadObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { GuardContext } from "../../src/core/guard.js";
import type { StateStore } from "../../src/core/store.js";

/**
 * A fenced write of one output object: "read-check-write under the guard's fence".
 *
 * The object carries the writing event's position and claim fence in its metadata (`src-position`,
 * `src-fence`). A write goes ahead only if
 *   1. the output holds an older position: HEAD and compare — the newest event wins, and an event whose
 *      output is already there (an earlier attempt wrote it, then failed to commit) is not written again;
 *   2. this run still holds its claim: a consistent read of the guard's state item shows our fence;
 * and the PUT is conditional on what the HEAD saw (`If-Match: <etag>`, or `If-None-Match: *` when there
 * was nothing), so on S3 a concurrent change makes it fail with 412/409 and we check again.
 *
 * Locally s3rver ignores both conditions, which leaves a window the length of one PUT between the
 * checks and the write. Check 2 keeps it to runs whose claim was taken *during* that PUT; after writing we
 * read the object back and write again if an older run's PUT landed over ours, and after the guard's
 * commit the committed run checks once more (`ensure`). A run whose claim was taken writes nothing.
 */
export interface FencedS3OutputOptions {
  s3: S3Client;
  bucket: string;
  /** The guard's state store, to check the claim right before writing. */
  store: StateStore;
}

export type FencedPutStatus = "applied" | "stale" | "lease-lost";

const POSITION = "src-position";
const FENCE = "src-fence";

interface Stamp {
  position: string;
  fence: number;
  etag?: string;
}

export class FencedS3Output {
  readonly #o: FencedS3OutputOptions;

  constructor(options: FencedS3OutputOptions) {
    this.#o = options;
  }

  async put(
    ctx: Pick<GuardContext, "position" | "fence" | "stateKey" | "signal">,
    key: string,
    body: Buffer,
    contentType = "application/octet-stream",
  ): Promise<FencedPutStatus> {
    const mine: Stamp = { position: ctx.position ?? "", fence: ctx.fence };
    for (let attempt = 0; attempt < 5; attempt++) {
      // Aborted: the lease was lost (the guard reports it) or the Lambda is about to time out (retry).
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const current = await this.#stamp(key);
      // This event's output (from an earlier attempt whose commit failed) or a newer one is there already.
      if (current && current.position >= mine.position) return "stale";
      const state = await this.#o.store.read(ctx.stateKey);
      if (!state || state.fence !== ctx.fence || state.status !== "running") return "lease-lost";
      try {
        await this.#o.s3.send(
          new PutObjectCommand({
            Bucket: this.#o.bucket,
            Key: key,
            Body: body,
            ContentType: contentType,
            Metadata: { [POSITION]: mine.position, [FENCE]: String(mine.fence) },
            ...(current?.etag ? { IfMatch: current.etag } : { IfNoneMatch: "*" }),
          }),
        );
      } catch (error) {
        if (isConditionFailure(error)) continue; // someone wrote meanwhile: look again
        throw error;
      }
      const after = await this.#stamp(key);
      // Same position from another claim of this event is the same output: done as well.
      if (after && after.position >= mine.position) return "applied";
      // An older run's write landed over ours (possible only where conditions are ignored): again.
    }
    throw new Error(`output ${this.#o.bucket}/${key} kept changing under 5 fenced writes`);
  }

  /**
   * After the commit: if this run's event is still the newest committed one of its subject and the output
   * holds an older position (an older run's write landed late, possible only where S3 conditions are
   * ignored), write this run's output again. Committed runs are the only ones that do this.
   */
  async ensure(
    key: string,
    committed: { stateKey: string; position: string; fence: number; body: Buffer; contentType: string },
  ): Promise<"unchanged" | "rewritten"> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.#stamp(key);
      if (current && current.position >= committed.position) return "unchanged";
      const state = await this.#o.store.read(committed.stateKey);
      if (state?.committedPosition !== committed.position) return "unchanged"; // a newer event owns it now
      try {
        await this.#o.s3.send(
          new PutObjectCommand({
            Bucket: this.#o.bucket,
            Key: key,
            Body: committed.body,
            ContentType: committed.contentType,
            Metadata: { [POSITION]: committed.position, [FENCE]: String(committed.fence) },
            ...(current?.etag ? { IfMatch: current.etag } : { IfNoneMatch: "*" }),
          }),
        );
        return "rewritten";
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
    }
    throw new Error(`output ${this.#o.bucket}/${key} kept changing while being repaired`);
  }

  async #stamp(key: string): Promise<Stamp | undefined> {
    try {
      const head = await this.#o.s3.send(new HeadObjectCommand({ Bucket: this.#o.bucket, Key: key }));
      const meta = head.Metadata ?? {};
      return { position: meta[POSITION] ?? "", fence: Number(meta[FENCE] ?? 0), etag: head.ETag };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  return statusOf(error) === 404 || (error instanceof Error && /NotFound|NoSuchKey/.test(error.name));
}

function isConditionFailure(error: unknown): boolean {
  const status = statusOf(error);
  return status === 412 || status === 409;
}
