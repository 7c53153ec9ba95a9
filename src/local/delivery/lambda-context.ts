import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from "../aws-local.js";

/** What a local Lambda `Context` is made from. */
export interface LocalContextOptions {
  functionName: string;
  timeoutMs: number;
  memoryMb: number;
  /** Epoch ms when the run started; the deadline is start + timeout. */
  startedAtMs: number;
  requestId?: string;
  /** The clock the deadline counts down on. Default `Date.now`. */
  now?: () => number;
}

/** A Lambda `Context` as the Node.js runtime passes it, with a deadline that counts down from the start. */
export function createLambdaContext(options: LocalContextOptions): Context {
  const now = options.now ?? Date.now;
  const deadlineMs = options.startedAtMs + options.timeoutMs;
  const requestId = options.requestId ?? randomUUID();
  const fail = () => {
    throw new Error("context.done/succeed/fail are not supported: return or throw from an async handler");
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:${options.functionName}`,
    memoryLimitInMB: String(options.memoryMb),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: `local/[$LATEST]${requestId.replace(/-/g, "")}`,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - now()),
    done: fail,
    fail,
    succeed: fail,
  };
}
