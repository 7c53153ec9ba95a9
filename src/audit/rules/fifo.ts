import { finding } from "../findings.js";
import { booleanProperty, type TemplateModel } from "../template.js";
import { deadLetterQueueIds, QUEUE } from "../topology.js";
import type { Finding } from "./common.js";

/**
 * Rule fifo-content-dedup: a FIFO queue without ContentBasedDeduplication. A warning: a producer may set
 * MessageDeduplicationId itself, which a template cannot show. Dead-letter queues are skipped (a redrive keeps ids).
 */
export function checkFifo(model: TemplateModel): Finding[] {
  const dlqs = deadLetterQueueIds(model);
  return model.ofType(QUEUE).flatMap((q) => {
    const name = q.properties.QueueName;
    const fifo =
      booleanProperty(q.properties.FifoQueue) || (typeof name === "string" && name.endsWith(".fifo"));
    if (!fifo || dlqs.has(q.id) || booleanProperty(q.properties.ContentBasedDeduplication) !== false)
      return [];
    const message = `FIFO queue ${q.id} has no ContentBasedDeduplication: only a producer's MessageDeduplicationId drops a resend`;
    return [finding("fifo-content-dedup", q.id, message)];
  });
}
