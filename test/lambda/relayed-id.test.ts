import type { EventBridgeEvent, SQSBatchResponse, SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { quietObservability } from "../../examples/shared/demo-kit.js";
import type { MessageEvent } from "../../src/core/event.js";
import { createGuard } from "../../src/core/guard.js";
import { MemoryOutbox } from "../../src/engines/memory/outbox.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import { outboxMessageId } from "../../src/outbox/message-id.js";
import { relayOutbox } from "../../src/outbox/relay.js";
import type { OutboxEntry } from "../../src/outbox/types.js";
import { parseInvocation } from "../../src/sources/parse-invocation.js";
import { lambdaContext } from "../kit/context.js";
import { snsEnvelope, sqsEvent, sqsRecord } from "../kit/events.js";

const RELAYED = outboxMessageId("order/1", "v1", "#1");

/** An SQS record as the relay's send of `id` arrives: a new SQS message id per send, the relay's id as attribute. */
function relayedRecord(body: string, id: string, receiveCount = 1): SQSRecord {
  const record = sqsRecord(body, { receiveCount });
  record.messageAttributes = {
    eonceMessageId: { stringValue: id, dataType: "String" },
  } as SQSRecord["messageAttributes"];
  return record;
}

function messageIdOf(input: unknown): string {
  const [unit] = parseInvocation(input, { messages: "accept" });
  const event = unit?.events[0] as MessageEvent | undefined;
  if (!event) throw new Error(`no event: ${JSON.stringify(unit?.error?.message)}`);
  return event.messageId;
}

describe("a relayed message's id is the message's id", () => {
  it("from an SQS message attribute, an SNS envelope's attributes and an EventBridge detail", () => {
    expect(messageIdOf(sqsEvent(relayedRecord("{}", RELAYED)))).toBe(RELAYED);
    const envelope = {
      ...snsEnvelope({ hello: 1 }),
      MessageAttributes: { eonceMessageId: { Type: "String", Value: RELAYED } },
    };
    expect(messageIdOf(sqsEvent(sqsRecord(envelope)))).toBe(RELAYED);
    const bridge: EventBridgeEvent<string, Record<string, unknown>> = {
      version: "0",
      id: "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
      "detail-type": "order charged",
      source: "shop.orders",
      account: "123456789012",
      time: "2026-11-29T10:00:00Z",
      region: "us-east-1",
      resources: [],
      detail: { order: 1, eonceMessageId: RELAYED },
    };
    expect(messageIdOf(bridge)).toBe(RELAYED);
    expect(messageIdOf(sqsEvent(sqsRecord(bridge)))).toBe(RELAYED);
  });

  it("keeps the transport's id when the attribute is not a relay's id", () => {
    for (const bad of ["", "eo1_short", `${RELAYED}x`, `eo2_${RELAYED.slice(4)}`]) {
      const record = relayedRecord("{}", bad);
      expect(messageIdOf(sqsEvent(record))).toBe(record.messageId);
    }
  });

  it("dedupes a resend that SQS took as a new message (new SQS id), without configuration", async () => {
    for (const relayed of [true, false]) {
      let runs = 0;
      const handler = sqsHandler(
        async () => {
          runs++;
        },
        { store: new MemoryStore(), messages: "accept", ...quietObservability() },
      );
      for (const receiveCount of [1, 1, 2]) {
        const record = relayed ? relayedRecord("charged", RELAYED, receiveCount) : sqsRecord("charged");
        const r = (await handler(sqsEvent(record), lambdaContext())) as SQSBatchResponse;
        expect(r.batchItemFailures).toEqual([]);
      }
      expect(runs).toBe(relayed ? 1 : 3);
    }
  });

  it("chains two guarded pipelines exactly once through an outbox whose relay sends every entry twice", async () => {
    const upstreamStore = new MemoryStore();
    const outbox = new MemoryOutbox();
    const upstream = createGuard({ store: upstreamStore, outbox });
    const queue: SQSRecord[] = [];
    const send = async (e: OutboxEntry) => {
      queue.push(relayedRecord(e.body, e.messageId), relayedRecord(e.body, e.messageId, 2));
    };
    for (const order of ["1", "2", "3"]) {
      // Each order's first run dies after publishing; its retry commits.
      let first = true;
      for (let attempt = 0; attempt < 2; attempt++) {
        await upstream.run({ subject: `order/${order}`, identity: "created" }, async (ctx) => {
          ctx.publish({ kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/charged" }, { order });
          if (first) {
            first = false;
            throw new Error("dies after publishing");
          }
        });
      }
    }
    await relayOutbox({ reader: outbox, sender: { send }, batchSize: 100 });
    expect(queue).toHaveLength(6);
    const seen: string[] = [];
    const downstream = sqsHandler(
      async (event) => {
        seen.push(JSON.parse((event as MessageEvent).body).order);
      },
      { store: new MemoryStore(), messages: "accept", ...quietObservability() },
    );
    for (const record of queue) await downstream(sqsEvent(record), lambdaContext());
    expect(seen.sort()).toEqual(["1", "2", "3"]);
  });
});
