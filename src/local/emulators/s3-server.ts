/**
 * A local S3 API: `s3rver` 3.7.1 in this process, bound to 127.0.0.1, storing in a temp directory.
 *
 * What s3rver 3.7.1 does with the AWS SDK v3 client on Node 20 (see test/local/servers.test.ts):
 * - PutObject (Buffer, string, Uint8Array bodies), GetObject, HeadObject, DeleteObject, ListObjectsV2,
 *   CopyObject (COPY and REPLACE metadata directives) and user metadata (`Metadata`) work.
 * - Conditional writes are ignored by s3rver (`IfNoneMatch: "*"` and a wrong `IfMatch` overwrite, 200): the
 *   layer in emulators/s3-conditional.ts, first in the middleware, implements them as S3 documents.
 *   GetObject ignores `IfMatch`; it honours `IfNoneMatch` (304).
 * - Checksums: with the SDK default `requestChecksumCalculation: "WHEN_SUPPORTED"` a Buffer body goes out
 *   plainly (plus an `x-amz-checksum-crc32` header s3rver ignores), but a stream body goes out
 *   `aws-chunked` with a checksum trailer and s3rver STORES THE CHUNK FRAMING as the object (silent
 *   corruption). Our client sets both checksum options to "WHEN_REQUIRED"; other clients' aws-chunked
 *   uploads are refused with 501 NotImplemented.
 * - CopyObject: s3rver decodes `x-amz-copy-source` with `decodeURI`, which leaves `%2B`, `%3A`, `%2F`...
 *   encoded, so a source encoded the AWS way (encodeURIComponent) is not found: a middleware re-encodes it.
 * - Only the `S3RVER`/`S3RVER` access key is accepted; SigV4 signatures are not verified.
 * - CreateBucket validates names (3-63 chars); `configureBuckets` at start does not.
 * - PutObject answers once the body is on disk (emulators/s3-durable-put.ts; s3rver answers before).
 * - Object events (raw records, see {@link S3rverEventRecord}) are emitted synchronously before the
 *   response is written, for PutObject, CopyObject, DeleteObject (only if the key existed), POST uploads
 *   and CompleteMultipartUpload (named `ObjectCreated:Post`). DeleteObjects (batch) emits NO events.
 *   Keys are raw (not URL-encoded); the sequencer is `Date.now()` in hex, so not unique and not increasing
 *   within a millisecond; Copy records carry no eTag; the bucket ARN reads `arn:aws:s3: : :<bucket>`.
 *   A later module turns these into faithful notifications; here they are passed through untouched.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import type S3rver from "s3rver";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../aws-local.js";
import type { LocalServer } from "./local-server.js";
import { conditionalWrites, rejectS3Request } from "./s3-conditional.js";
import type { ConditionalWritesOptions } from "./s3-conditional-options.js";
import { makePutObjectDurable } from "./s3-durable-put.js";

/** s3rver accepts only its hard-coded key pair (it does not verify SigV4 signatures): the local one. */
export const S3RVER_CREDENTIALS = LOCAL_CREDENTIALS;

/** One record as s3rver emits it (node_modules/s3rver/lib/models/event.js): not a faithful notification. */
export interface S3rverEventRecord {
  eventVersion: string;
  eventSource: "aws:s3";
  awsRegion: string;
  eventTime: string;
  eventName: "ObjectCreated:Put" | "ObjectCreated:Post" | "ObjectCreated:Copy" | "ObjectRemoved:Delete";
  userIdentity: { principalId: string };
  requestParameters: { sourceIPAddress: string };
  responseElements: Record<string, string>;
  s3: {
    s3SchemaVersion: string;
    configurationId: string;
    bucket: { name: string; ownerIdentity: { principalId: string }; arn: string };
    /** `key` is not URL-encoded; `sequencer` is `Date.now()` in upper-case hex and not unique. */
    object: { key: string; sequencer: string; size?: number; eTag?: string };
  };
}

export type S3ObjectEventListener = (record: S3rverEventRecord) => void;

export interface LocalS3Server extends LocalServer {
  /** The temp directory s3rver stores buckets in; removed by `stop()`. */
  readonly directory: string;
  /** A path-style client with s3rver's credentials and checksums only when required. */
  client(): S3Client;
  /** Calls `listener` for every object event, synchronously, in request order; returns an unsubscribe. */
  onObjectEvent(listener: S3ObjectEventListener): () => void;
  /** Closes the server and removes its storage directory. */
  stop(): Promise<void>;
}

export interface StartS3ServerOptions {
  /** Default: a port the OS picks. */
  port?: number;
  /** Buckets to create before the server accepts requests. */
  buckets?: string[];
  /** Gets a throwing listener's error (which must not fail the S3 request); default console.error. */
  onListenerError?: (error: unknown, record: S3rverEventRecord) => void;
  /** Hooks of the conditional-writes layer (tests only). */
  conditionalWrites?: ConditionalWritesOptions;
}

export function s3Client(endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    region: LOCAL_REGION,
    credentials: S3RVER_CREDENTIALS,
    forcePathStyle: true,
    // Otherwise stream bodies go out aws-chunked, which s3rver stores verbatim.
    requestChecksumCalculation: "WHEN_REQUIRED",
    // s3rver returns no checksums; asking for them is pointless.
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 3,
  });
}

async function loadS3rver(): Promise<typeof S3rver> {
  try {
    return (await import("s3rver")).default;
  } catch (cause) {
    throw new Error("the local S3 server needs the npm package s3rver (npm i -D s3rver)", { cause });
  }
}

const fixRequests: S3rver.S3rverMiddleware = (ctx, next) => {
  const sha = ctx.headers["x-amz-content-sha256"];
  const encoding = ctx.headers["content-encoding"];
  if ((typeof sha === "string" && sha.startsWith("STREAMING-")) || encoding?.includes("aws-chunked")) {
    rejectS3Request(
      ctx,
      501,
      "NotImplemented",
      "s3rver would store the aws-chunked framing as the object: create the S3Client with " +
        'requestChecksumCalculation: "WHEN_REQUIRED" (see s3Client in src/local/emulators/s3-server.ts)',
    );
    return;
  }
  const copySource = ctx.headers["x-amz-copy-source"];
  if (typeof copySource === "string") {
    try {
      // Makes s3rver's decodeURI yield what AWS's full percent-decoding yields.
      ctx.headers["x-amz-copy-source"] = encodeURI(decodeURIComponent(copySource));
    } catch {
      // Malformed escapes: leave it for s3rver to answer NoSuchKey.
    }
  }
  return next();
};

export async function startS3Server(options: StartS3ServerOptions = {}): Promise<LocalS3Server> {
  const S3rverClass = await loadS3rver();
  const directory = await mkdtemp(join(tmpdir(), "eonce-s3-"));
  const server = new S3rverClass({
    address: "127.0.0.1",
    port: options.port ?? 0,
    silent: true,
    directory,
    vhostBuckets: false,
    configureBuckets: (options.buckets ?? []).map((name) => ({ name })),
  });
  makePutObjectDurable(server.store);
  // Koa composes its middleware when it starts listening, so this runs before s3rver's own.
  server.middleware.unshift(fixRequests, conditionalWrites(options.conditionalWrites));
  rejectListenErrors(server);
  const events = objectEvents(options.onListenerError);
  server.on("event", events.dispatch);

  let bound: { address: string; port: number };
  try {
    bound = await server.run();
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  const endpoint = `http://127.0.0.1:${bound.port}`;
  let stopped: Promise<void> | undefined;
  return {
    endpoint,
    port: bound.port,
    address: bound.address,
    directory,
    client: () => s3Client(endpoint),
    onObjectEvent: events.subscribe,
    stop() {
      stopped ??= (async () => {
        server.off("event", events.dispatch);
        events.clear();
        try {
          const closing = server.close();
          // Keep-alive sockets of clients not yet destroyed would hold close() open.
          server.httpServer?.closeAllConnections();
          await closing;
        } finally {
          await rm(directory, { recursive: true, force: true });
        }
      })();
      return stopped;
    },
  };
}

/**
 * s3rver 3.7.1 waits for a listen callback that never gets the error (a taken port is an 'error' event,
 * uncaught): run() would hang for ever. Listen with the callback form and reject on 'error'.
 */
function rejectListenErrors(server: S3rver): void {
  const listen = server.listen.bind(server);
  server.listen = (...args: unknown[]) =>
    new Promise<import("node:http").Server>((resolve, reject) => {
      const http = listen(...args, () => resolve(http)) as import("node:http").Server;
      http.once("error", reject);
    });
}

/** The object event listeners, and the dispatcher s3rver calls inside its request handler. */
function objectEvents(onListenerError?: StartS3ServerOptions["onListenerError"]) {
  const listeners = new Set<S3ObjectEventListener>();
  const report =
    onListenerError ??
    ((error: unknown, record: S3rverEventRecord) =>
      console.error(`s3 object event listener failed (${record.eventName} ${record.s3.object.key})`, error));
  return {
    // A throw here would turn the S3 call into a 500.
    dispatch(event: { Records: unknown[] }) {
      for (const record of event.Records as S3rverEventRecord[]) {
        for (const listener of [...listeners]) {
          try {
            listener(record);
          } catch (error) {
            report(error, record);
          }
        }
      }
    },
    subscribe(listener: S3ObjectEventListener): () => void {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    clear: () => listeners.clear(),
  };
}
