/**
 * The test kit: event builders, the Lambda context, the stores the store and guard suites loop over, and the
 * fixtures several suites share. Tests import from here; the bench imports the vitest-free modules
 * (events.ts, context.ts) directly.
 */
export { deferred, millisecondApartClock, sleep } from "./async.js";
export { lambdaContext } from "./context.js";
export { dynamoTables, localDynamoDB, type Tables } from "./dynamodb.js";
export {
  type EventBridgeS3Input,
  EXAMPLE_BUCKET,
  EXAMPLE_SEQUENCER,
  eventBridgeS3,
  guardEvent,
  lambdaEventOf,
  lambdaRecordOf,
  nextSequencer,
  type S3RecordInput,
  type SqsRecordOptions,
  s3Notification,
  s3Record,
  s3TestEvent,
  snsEnvelope,
  sqsEvent,
  sqsRecord,
} from "./events.js";
export { type Captured, captureOutput, messages } from "./output.js";
export { type LocalSqs, type PollResult, pollOnce, type SqsLambda, useLocalSqs } from "./sqs.js";
export { parseStoreList, STORE_NAMES, type StoreName, selectStoreNames } from "./store-names.js";
export {
  ALL_STORES,
  loseResponses,
  STORES,
  type StoreFactory,
  type StoreUnderTest,
  selectStores,
  type TestSink,
  useStore,
  wrapStore,
} from "./stores.js";
export {
  DYNAMODB_STREAM_ARN,
  type DynamoDBRecordInput,
  dynamodbRecord,
  KINESIS_STREAM_ARN,
  type KinesisRecordInput,
  kinesisRecord,
  nextSequenceNumber,
  streamEvent,
} from "./stream-events.js";
