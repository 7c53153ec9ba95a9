/**
 * Options of the conditional-write layer (s3-conditional.ts), in a file of their own: s3-server.ts's public types
 * name them without importing s3rver's.
 */
export interface ConditionalWritesOptions {
  /**
   * Called between the arrival check and the write of a conditional request: tests use it to land a conflicting
   * write there (what on S3 happens during a long upload).
   */
  beforeConditionalWrite?: (bucket: string, key: string) => Promise<void>;
}
