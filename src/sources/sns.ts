import type { SNSMessage } from "aws-lambda";
import type { Delivery } from "../core/event.js";
import { isObject, type JsonObject, optionalString, requireString } from "./fields.js";

/**
 * An SNS envelope as SQS receives it with raw message delivery off: `{"Type":"Notification",
 * "MessageId", "TopicArn", "Message": "<the payload as a JSON string>", ...}`. With raw delivery on,
 * the body is the payload itself and nothing here applies.
 */
export function isSnsEnvelope(value: unknown): value is JsonObject & Pick<SNSMessage, "Type" | "Message"> {
  return (
    isObject(value) &&
    value.Type === "Notification" &&
    typeof value.Message === "string" &&
    (typeof value.MessageId === "string" || typeof value.TopicArn === "string")
  );
}

export function snsMetadata(value: JsonObject, path: string): NonNullable<Delivery["sns"]> {
  const sns: NonNullable<Delivery["sns"]> = { messageId: requireString(value, "MessageId", path) };
  const topicArn = optionalString(value, "TopicArn", path);
  if (topicArn !== undefined) sns.topicArn = topicArn;
  return sns;
}
