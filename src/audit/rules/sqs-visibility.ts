import { VISIBILITY_TIMEOUT_FACTOR as FACTOR } from "../../cdk/queue-rules.js";
import { finding } from "../findings.js";
import { numberProperty, type Resource, type TemplateModel } from "../template.js";
import { type Mapping, mappings, QUEUE } from "../topology.js";
import { type Finding, seconds, unresolved } from "./common.js";

/** Lambda's default function timeout and SQS's default visibility timeout, in seconds. */
export const DEFAULT_FUNCTION_TIMEOUT_S = 3;
export const DEFAULT_VISIBILITY_TIMEOUT_S = 30;

/**
 * Rules sqs-visibility-6x and sqs-visibility-1.3x: the source queue's visibility timeout against the function's
 * timeout, per event source mapping. Below 1.3 × only sqs-visibility-1.3x is reported (it implies the other).
 */
export function checkVisibility(model: TemplateModel): Finding[] {
  return mappings(model).flatMap((m) => {
    if (m.source.kind !== "resource") {
      // Only an SQS source has a visibility timeout; an unresolved one might be a queue.
      const text = m.source.text;
      return /:sqs:|queue/i.test(text)
        ? [unresolved(m.esm, "EventSourceArn", m.source, "the visibility timeout")]
        : [];
    }
    if (m.source.resource.type !== QUEUE) return [];
    if (m.function.kind !== "resource")
      return [unresolved(m.esm, "FunctionName", m.function, "the visibility timeout")];
    return compare(m, m.source.resource, m.function.resource);
  });
}

function compare(m: Mapping, queue: Resource, fn: Resource): Finding[] {
  const timeout = numberProperty(fn.properties.Timeout, DEFAULT_FUNCTION_TIMEOUT_S);
  const visibility = numberProperty(queue.properties.VisibilityTimeout, DEFAULT_VISIBILITY_TIMEOUT_S);
  if (!timeout.known) return [unresolvedValue(m, `${fn.id}.Timeout ${timeout.text}`)];
  if (!visibility.known) return [unresolvedValue(m, `${queue.id}.VisibilityTimeout ${visibility.text}`)];
  const [v, t] = [visibility.value, timeout.value];
  const facts = `queue ${queue.id} has VisibilityTimeout ${seconds(v)}, function ${fn.id} has Timeout ${seconds(t)}`;
  // Compare in tenths so that 1.3 × t has no floating-point error at the boundary.
  if (v * 10 < t * 13) {
    return [
      finding(
        "sqs-visibility-1.3x",
        queue.id,
        `${facts}: under 1.3 × (${seconds((t * 13) / 10)}), so under ${FACTOR} × (${seconds(t * FACTOR)}) too`,
      ),
    ];
  }
  if (v < t * FACTOR)
    return [finding("sqs-visibility-6x", queue.id, `${facts}: under ${FACTOR} × (${seconds(t * FACTOR)})`)];
  return [];
}

function unresolvedValue(m: Mapping, what: string): Finding {
  return finding(
    "unresolved-reference",
    m.esm.id,
    `${what} is not known before deployment: the visibility timeout not checked`,
  );
}
