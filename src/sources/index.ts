/**
 * Lambda invocation payloads → delivery units and normalized events (S3, SQS, SNS, EventBridge, Kinesis, DynamoDB
 * Streams).
 * @module effectively-once/sources
 */
export { decodeS3NotificationKey, encodeS3NotificationKey, MAX_S3_KEY_BYTES } from "./key-encoding.js";
export { isObjectReplaced, type S3ObjectInput, s3ObjectInput } from "./object-input.js";
export { parseInvocation } from "./parse-invocation.js";
export type { DeliveryUnit, ParseOptions, RecoveredSqsFields } from "./types.js";
