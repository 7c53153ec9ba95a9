import * as lambda from "aws-cdk-lib/aws-lambda";

/** The state table's names: the store's own (a module with no imports, so no SDK is loaded). */
export { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "../engines/dynamodb/schema-names.js";

/** Environment variables the construct sets on the function (the reference handlers read these). */
export const ENV = {
  /** The state table (the `state` prop's `table` kind, the default). */
  stateTable: "STATE_TABLE",
  /** `inline` or `external`: the state is not in a state table of the stack (then STATE_TABLE is not set). */
  state: "EONCE_STATE",
  /** Inline state: the table whose rows hold it and its hash key (InlineDynamoDBStore's tableName, keyAttribute). */
  inlineStateTable: "EONCE_STATE_TABLE",
  inlineStateKeyAttribute: "EONCE_STATE_KEY_ATTRIBUTE",
  /** The outbox table (the `outbox` prop), to the function and to the relay. */
  outboxTable: "OUTBOX_TABLE",
  outputBucket: "OUTPUT_BUCKET",
  inputBucket: "INPUT_BUCKET",
  /** The pipeline's name, for the handler's `pipeline` option (the metric dimension). */
  pipeline: "EONCE_PIPELINE",
  serviceName: "POWERTOOLS_SERVICE_NAME",
  metricsNamespace: "POWERTOOLS_METRICS_NAMESPACE",
} as const;

/** The Node.js runtime: the newest Lambda offers (cdk-nag AwsSolutions-L1 asks for the latest). */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;
/** esbuild's target for RUNTIME. */
export const ESBUILD_TARGET = "node24";

/**
 * SQS actions of the function on its source queue: the event source mapping's poll (Receive, Delete,
 * GetQueueAttributes) and the adapter's visibility heartbeat (ChangeMessageVisibility).
 */
export const QUEUE_CONSUMER_ACTIONS = [
  "sqs:ReceiveMessage",
  "sqs:DeleteMessage",
  "sqs:GetQueueAttributes",
  "sqs:ChangeMessageVisibility",
];
/**
 * The DynamoDB store calls UpdateItem (claim, renew, commit, release), GetItem (fallback read) and
 * TransactWriteItems (commit with effects). IAM has no TransactWriteItems action: each item of a
 * transaction is authorized as its own PutItem/UpdateItem, so the state table needs these two only.
 */
export const STATE_TABLE_ACTIONS = ["dynamodb:GetItem", "dynamodb:UpdateItem"];
