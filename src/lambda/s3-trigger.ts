import { MalformedEventError } from "../core/errors.js";
import { isEventBridgeEvent } from "../sources/eventbridge.js";
import { describe, isObject } from "../sources/fields.js";
import { directEventBridgeS3, directS3Record, directTestEvent } from "../sources/parse-s3.js";
import { isS3TestEvent } from "../sources/s3-notification.js";
import type { TriggerKit } from "./trigger-kit.js";
import { TRIGGERS, type TriggerName, wrongTrigger } from "./triggers.js";

const S3_SHAPES =
  "expected an S3 notification (Records[].eventSource aws:s3), an s3:TestEvent or an S3 event from EventBridge";

/** Record sources of other triggers, as an error names them. */
const OTHER_SOURCES: Record<string, TriggerName> = {
  "aws:sqs": TRIGGERS.sqs,
  "aws:kinesis": TRIGGERS.kinesis,
  "aws:dynamodb": TRIGGERS["dynamodb-streams"],
};

/**
 * The kit of `s3Handler`: direct S3 notifications, the `s3:TestEvent` and S3 events EventBridge invokes it with,
 * parsed as `parseInvocation` parses them, so that its bundle has no other source's parser and no SQS heartbeat. Another trigger's invocation is
 * recognised by its shape alone and refused, naming the wrapper that takes it.
 */
export const S3_TRIGGER: TriggerKit = {
  parse(input, options, what) {
    if (!isObject(input)) {
      throw new MalformedEventError(`invocation is ${describe(input)}, not an object; ${S3_SHAPES}`, "");
    }
    if (isS3TestEvent(input)) return [directTestEvent(input, options)];
    const records = input.Records;
    if (!Array.isArray(records)) {
      if (isEventBridgeEvent(input)) {
        const unit = directEventBridgeS3(input, options);
        if (unit) return [unit];
        throw wrongTrigger(what, {
          what: "an EventBridge event from another source",
          wrapper: "eventBridgeHandler",
        });
      }
      throw new MalformedEventError(`unknown invocation shape; ${S3_SHAPES}`, "");
    }
    if (records.length === 0) throw new MalformedEventError("Records is empty", "Records");
    const sources = records.map((r) => (isObject(r) ? (r.eventSource ?? r.EventSource) : undefined));
    if (!sources.includes("aws:s3")) {
      const other = sources.find((s) => typeof s === "string" && Object.hasOwn(OTHER_SOURCES, s));
      if (other !== undefined) throw wrongTrigger(what, OTHER_SOURCES[other as string] as TriggerName);
      throw new MalformedEventError(`no record has eventSource aws:s3; ${S3_SHAPES}`, "Records");
    }
    // Lambda never mixes sources in one batch; a stray record is parsed (and found malformed) as an S3 one.
    return records.map((record, i) => directS3Record(record, i, options));
  },
};
