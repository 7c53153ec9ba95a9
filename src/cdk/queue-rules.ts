/**
 * The SQS source's safe bounds, which the construct enforces (resolve-props.ts) and `eonce audit template` checks
 * (src/audit/rules). No imports: the audit loads this file without aws-cdk-lib.
 */

/** Lambda's rule of thumb for SQS sources: visibility timeout ≥ 6 × function timeout. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
/** Fewer receives dead-letter messages that were only throttled or busy. */
export const MIN_MAX_RECEIVE_COUNT = 5;
