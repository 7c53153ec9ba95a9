import type S3rver from "s3rver";
import type { ConditionalWritesOptions } from "./s3-conditional-options.js";

/**
 * S3 conditional requests for s3rver, which ignores `If-None-Match` and `If-Match`. A Koa middleware in front of
 * s3rver's own handlers that does what the S3 User Guide ("conditional writes") documents for PutObject,
 * CopyObject and CompleteMultipartUpload:
 * - `If-None-Match: *`: 412 PreconditionFailed when the key exists. Any other value: 501 NotImplemented (S3 accepts
 *   only `*` there).
 * - `If-Match: <etag>`: 412 PreconditionFailed when the key is missing or its ETag differs.
 * - The condition is checked when the request arrives and again, serialised per key, right before the write; if
 *   another write to the key landed in between (during the upload, on S3), 409 ConditionalRequestConflict.
 *
 * And what the GetObject and HeadObject references document for reads: `If-Match: <etag>` answers 412
 * PreconditionFailed when the object's ETag differs (404 when there is none), `If-None-Match: <etag>` answers 304
 * Not Modified when it matches (s3rver does that one itself). A handler reads the object version its event names this way (see
 * `s3ObjectInput` in src/sources/object-input.ts) on buckets without versioning.
 *
 * Every request on an object key (reads included) runs under that key's lock until its response has been sent:
 * s3rver writes the body, then its ETag, then its metadata in separate files, and a read between them would see
 * one object's ETag with another's metadata. So reads see whole objects, as S3's strong consistency promises.
 * Only the current object matters (s3rver has no versioning). Conditional deletes are not emulated.
 */

interface Target {
  bucket: string;
  key: string;
}

/** The per-key locks: a chain of promises per `bucket/key`; an entry goes once its chain is idle. */
class KeyLocks {
  readonly #tails = new Map<string, Promise<void>>();

  /** Resolves with a release function once every earlier holder of `name` has released. */
  async acquire(name: string): Promise<() => void> {
    const previous = this.#tails.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(name, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      if (this.#tails.get(name) === tail) this.#tails.delete(name);
    };
  }
}

/** Answers S3's error XML without reaching s3rver (the SDK names the error after `Code`). */
export function rejectS3Request(
  ctx: S3rver.S3rverContext,
  status: number,
  code: string,
  message: string,
  extra: Record<string, string> = {},
): void {
  ctx.req.resume();
  ctx.status = status;
  ctx.type = "application/xml";
  const fields = Object.entries(extra)
    .map(([name, value]) => `<${name}>${value}</${name}>`)
    .join("");
  ctx.body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${code}</Code><Message>${message}</Message>${fields}</Error>`;
}

const SUBRESOURCES = ["acl", "tagging", "legal-hold", "retention", "torrent", "select", "uploads"];

/** The object a path-style request addresses, or undefined for service, bucket and subresource requests. */
function targetOf(ctx: S3rver.S3rverContext): Target | undefined {
  const match = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
  if (!match) return undefined;
  if (SUBRESOURCES.some((name) => name in ctx.query)) return undefined;
  try {
    return { bucket: decodeURIComponent(match[1] as string), key: decodeURIComponent(match[2] as string) };
  } catch {
    return undefined; // malformed escapes: s3rver answers
  }
}

/** Writes that S3 lets carry a write condition: a whole-object PUT (or copy), or completing a multipart upload. */
function isConditionalWrite(ctx: S3rver.S3rverContext): boolean {
  if (ctx.method === "PUT") return !("partNumber" in ctx.query) && !("uploadId" in ctx.query);
  return ctx.method === "POST" && "uploadId" in ctx.query;
}

function header(ctx: S3rver.S3rverContext, name: string): string | undefined {
  const value = ctx.headers[name];
  return typeof value === "string" ? value : undefined;
}

/** The current ETag (quoted, as S3 sends it), or undefined when there is no object. */
async function currentEtag(ctx: S3rver.S3rverContext, target: Target): Promise<string | undefined> {
  try {
    const metadata = await ctx.app.store.getMetadata(target.bucket, target.key);
    return metadata.etag as string;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

const unquote = (etag: string) => etag.trim().replace(/^W\//, "").replace(/"/g, "");

type Verdict =
  | { ok: true }
  | { ok: false; status: number; code: string; message: string; condition?: string };

/** The condition's verdict on the object as it is (`etag` undefined: no object). */
function evaluate(ctx: S3rver.S3rverContext, etag: string | undefined): Verdict {
  const noneMatch = header(ctx, "if-none-match");
  const match = header(ctx, "if-match");
  if (noneMatch !== undefined && noneMatch.trim() !== "*") {
    return {
      ok: false,
      status: 501,
      code: "NotImplemented",
      message: "A header you provided implies functionality that is not implemented",
    };
  }
  const failed = (condition: string): Verdict => ({
    ok: false,
    status: 412,
    code: "PreconditionFailed",
    message: "At least one of the pre-conditions you specified did not hold",
    condition,
  });
  if (noneMatch !== undefined && etag !== undefined) return failed("If-None-Match");
  if (match !== undefined && (etag === undefined || unquote(match) !== unquote(etag)))
    return failed("If-Match");
  return { ok: true };
}

/** Holds `release` until the response is out (or the connection is gone), so that reads see whole objects. */
function releaseWhenSent(ctx: S3rver.S3rverContext, release: () => void): void {
  if (ctx.res.writableFinished || ctx.res.destroyed) release();
  ctx.res.once("finish", release);
  ctx.res.once("close", release);
}

/** HTTP lets If-Match carry a list of ETags, or `*` for any. */
function etagListHas(list: string, etag: string): boolean {
  return list.split(",").some((item) => item.trim() === "*" || unquote(item) === unquote(etag));
}

const isRead = (ctx: S3rver.S3rverContext) => ctx.method === "GET" || ctx.method === "HEAD";

/**
 * Answers a read whose If-Match fails (412; a missing object is left to s3rver's 404); false when s3rver should serve
 * it. If-None-Match needs nothing here: s3rver (Koa's freshness check) already answers 304 when the ETag matches.
 */
async function answeredRead(ctx: S3rver.S3rverContext, target: Target): Promise<boolean> {
  const match = header(ctx, "if-match");
  if (match === undefined) return false;
  const etag = await currentEtag(ctx, target);
  if (etag === undefined || etagListHas(match, etag)) return false;
  rejectS3Request(
    ctx,
    412,
    "PreconditionFailed",
    "At least one of the pre-conditions you specified did not hold",
    {
      Condition: "If-Match",
    },
  );
  return true;
}

/** The middleware; put it first (`server.middleware.unshift`) so it runs before s3rver's handlers. */
export function conditionalWrites(options: ConditionalWritesOptions = {}): S3rver.S3rverMiddleware {
  const locks = new KeyLocks();
  return async (ctx, next) => {
    const target = targetOf(ctx);
    if (!target) return next();
    const name = `${target.bucket}/${target.key}`;
    const conditional =
      isConditionalWrite(ctx) &&
      (header(ctx, "if-none-match") !== undefined || header(ctx, "if-match") !== undefined);
    let seen: string | undefined;
    if (conditional) {
      const release = await locks.acquire(name);
      try {
        seen = await currentEtag(ctx, target);
      } finally {
        release();
      }
      const verdict = evaluate(ctx, seen);
      if (!verdict.ok) {
        const extra = verdict.condition ? { Condition: verdict.condition } : undefined;
        return rejectS3Request(ctx, verdict.status, verdict.code, verdict.message, extra);
      }
      await options.beforeConditionalWrite?.(target.bucket, target.key);
    }
    const release = await locks.acquire(name);
    try {
      if (isRead(ctx) && (await answeredRead(ctx, target))) {
        release();
        return;
      }
      if (conditional && (await currentEtag(ctx, target)) !== seen) {
        release();
        return rejectS3Request(
          ctx,
          409,
          "ConditionalRequestConflict",
          "A conflicting operation occurred. If using PutObject you can retry the request.",
        );
      }
      await next();
    } catch (error) {
      release();
      throw error;
    }
    releaseWhenSent(ctx, release);
  };
}
