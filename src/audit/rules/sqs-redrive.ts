import { MIN_MAX_RECEIVE_COUNT } from "../../cdk/queue-rules.js";
import { finding } from "../findings.js";
import { asObject, isObject, numberProperty, type TemplateModel } from "../template.js";
import { sourceQueues } from "../topology.js";
import type { Finding } from "./common.js";

/** Rules sqs-no-dlq and sqs-max-receive-count, on the queues a pipeline reads from (never on the DLQs). */
export function checkRedrive(model: TemplateModel): Finding[] {
  return [...sourceQueues(model).values()].flatMap((queue) => {
    const policy = redrivePolicy(queue.properties.RedrivePolicy);
    if (!policy || policy.deadLetterTargetArn === undefined) {
      return [
        finding(
          "sqs-no-dlq",
          queue.id,
          `queue ${queue.id} has no RedrivePolicy: failing messages never leave it`,
        ),
      ];
    }
    const count = numberProperty(policy.maxReceiveCount, 0);
    if (!count.known) {
      const message = `${queue.id} RedrivePolicy.maxReceiveCount ${count.text} is not known before deployment: not checked`;
      return [finding("unresolved-reference", queue.id, message)];
    }
    if (count.value < MIN_MAX_RECEIVE_COUNT) {
      const message = `queue ${queue.id} dead-letters after ${count.value} receive(s), under ${MIN_MAX_RECEIVE_COUNT}`;
      return [finding("sqs-max-receive-count", queue.id, message)];
    }
    return [];
  });
}

/** RedrivePolicy is an object, or (in older templates) a JSON string. */
function redrivePolicy(value: unknown): Record<string, unknown> | undefined {
  if (typeof value === "string") {
    try {
      return asObject(JSON.parse(value));
    } catch {
      return undefined;
    }
  }
  return isObject(value) ? value : undefined;
}
