// Minimal types for untyped dev dependencies of the local runtime (only what src/local uses).

declare module "s3rver" {
  import type { IncomingMessage, Server, ServerResponse } from "node:http";
  import type { AddressInfo } from "node:net";

  namespace S3rver {
    /** The slice of a Koa context the local middlewares touch. */
    interface S3rverContext {
      readonly req: IncomingMessage;
      readonly headers: IncomingMessage["headers"];
      readonly res: ServerResponse;
      readonly method: string;
      /** The request path, still percent-encoded. */
      readonly path: string;
      readonly query: Record<string, string | string[] | undefined>;
      /** s3rver's filesystem store: `getMetadata` throws ENOENT when there is no object. */
      readonly app: { store: { getMetadata(bucket: string, key: string): Promise<Record<string, unknown>> } };
      status: number;
      type: string;
      body: unknown;
    }

    type S3rverMiddleware = (ctx: S3rverContext, next: () => Promise<void>) => unknown;

    /** The object s3rver's store writes (its `S3Object`). */
    interface StoredObject {
      bucket: string;
      key: string;
      content: Buffer | NodeJS.ReadableStream;
      metadata: Record<string, string>;
    }

    /** s3rver's filesystem store: the methods src/local/emulators/s3-durable-put.ts replaces and calls. */
    interface FilesystemStore {
      getResourcePath(bucket: string, key: string | undefined, resource: string): string;
      putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
      putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
    }
  }

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Buffer)[] }[];
  }

  class S3rver {
    constructor(options?: S3rverOptions);
    /** Koa's middleware stack, composed when the server starts listening. */
    middleware: S3rver.S3rverMiddleware[];
    httpServer?: Server;
    readonly store: S3rver.FilesystemStore;
    run(): Promise<AddressInfo>;
    /** Creates the HTTP server and listens; with a trailing callback it returns the server at once. */
    listen(...args: unknown[]): import("node:http").Server | Promise<import("node:http").Server>;
    close(): Promise<void>;
    /** Emitted synchronously by PutObject, CopyObject, DeleteObject, POST and CompleteMultipartUpload. */
    on(event: "event", listener: (event: { Records: unknown[] }) => void): this;
    off(event: "event", listener: (event: { Records: unknown[] }) => void): this;
  }

  export = S3rver;
}
