import { randomUUID } from "node:crypto";
import type { MessageAttributeValue } from "@aws-sdk/client-sqs";
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from "../../local/aws-local.js";
import { bodyObject, type ReplayMessage } from "./messages.js";

/** A replayed message in the shapes AWS delivers it: an SNS envelope, SQS attributes, an EventBridge event. */

/** An SNS envelope as SQS receives it with raw message delivery off. */
export function snsEnvelope(m: ReplayMessage): string {
  const attributes = Object.fromEntries(
    Object.entries(m.attributes ?? {}).map(([k, v]) => [
      k,
      { Type: typeof v === "number" ? "Number" : "String", Value: String(v) },
    ]),
  );
  return JSON.stringify({
    Type: "Notification",
    MessageId: randomUUID(),
    TopicArn: `arn:aws:sns:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:eonce-run`,
    Message: m.body,
    Timestamp: new Date().toISOString(),
    SignatureVersion: "1",
    ...(m.attributes ? { MessageAttributes: attributes } : {}),
  });
}

export function sqsAttributes(a: Record<string, string | number>): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    Object.entries(a).map(([k, v]) => [
      k,
      typeof v === "number"
        ? { DataType: "Number", StringValue: String(v) }
        : { DataType: "String", StringValue: v },
    ]),
  );
}

/** The message's body as an EventBridge event's detail: a JSON object, checked before anything starts. */
export function eventBridgeDetail(m: ReplayMessage): Record<string, unknown> {
  return bodyObject(m, "an EventBridge event's detail must be a JSON object");
}

/** An application event as EventBridge hands it to a rule's Lambda target. */
export function eventBridgeEnvelope(m: ReplayMessage) {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "eonce run message",
    source: "eonce.run",
    account: LOCAL_ACCOUNT_ID,
    time: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    region: LOCAL_REGION,
    resources: [],
    detail: eventBridgeDetail(m),
  };
}
