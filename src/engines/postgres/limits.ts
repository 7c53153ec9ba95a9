import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import type { EngineLimits } from "../engine.js";

/**
 * PostgreSQL's defaults. A result could be larger (a `text` holds up to 1 GB), but the same default as DynamoDB's
 * keeps an application's results portable between engines; a store's `maxResultBytes` raises it.
 */
export const POSTGRES_LIMITS: EngineLimits = {
  maxResultBytes: DYNAMODB_MAX_RESULT_BYTES,
  /**
   * The most writes a step folds. PostgreSQL has no transaction limit, but each write is a round trip while the
   * step holds the subject's fence row (the subject's other steps and the dispatcher's commit wait): 1000 keeps that
   * under a second at LAN latency and stops a runaway loop with a clear error instead of a long lock.
   */
  maxWritesPerCommit: 1000,
};
