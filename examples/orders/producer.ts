import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { sendFifoMessage } from "../../src/lambda/fifo-producer.js";
import type { Order } from "./order.js";

/**
 * The checkout side. `resend` says whether the producer sends an order a second time (its first send
 * timed out on the client, say): a standard queue takes both; a FIFO queue drops the second, because
 * `sendFifoMessage` derives the same MessageDeduplicationId from the order both times.
 */
export async function sendOrder(
  sqs: SQSClient,
  queueUrl: string,
  order: Order,
  resend: boolean,
): Promise<void> {
  for (let i = 0; i < (resend ? 2 : 1); i++) {
    if (queueUrl.endsWith(".fifo")) {
      // One group per customer: a customer's orders are charged in order, others go on in parallel.
      await sendFifoMessage(sqs, {
        queueUrl,
        body: order,
        subject: order.customerId,
        identity: order.orderId,
      });
    } else {
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(order) }));
    }
  }
}
