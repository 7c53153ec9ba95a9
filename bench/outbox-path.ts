/**
 * What publishing one message costs per event, on DynamoDB Local and fauxqs, beside a handler that sends the same
 * message itself: each event a `guard.run` (or `guard.apply`) with its row folded into the commit, then
 *
 * - `direct`: the handler sends the message (SQS SendMessage) before returning;
 * - `outbox, stream relay`: `ctx.publish` (an outbox entry in the commit), then `outboxStreamHandler` on the entries'
 *   INSERT records (reading the stream is Lambda's and unbilled: the handler's own requests are counted);
 * - `outbox, polling relay`: `ctx.publish`, then `relayOutbox` rounds over `DynamoDBOutbox` until it is empty.
 *
 * Requests are counted per client (the handler's DynamoDB, the relay's DynamoDB, SQS), WCU and RCU from DynamoDB's
 * ConsumedCapacity with AWS's transaction pricing where DynamoDB Local's figure is wrong (bench/capacity.ts).
 *
 *   tsx bench/outbox-path.ts [--events 200]
 */
import { randomUUID } from "node:crypto";
import { type AttributeValue, type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBStreamEvent } from "aws-lambda";
import { Command } from "commander";
import { createGuard } from "../src/core/guard.js";
import { DynamoDBOutbox } from "../src/engines/dynamodb/outbox.js";
import { createOutboxTable } from "../src/engines/dynamodb/outbox-schema.js";
import { outboxStreamHandler } from "../src/engines/dynamodb/outbox-stream-relay.js";
import { createStateTable } from "../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../src/engines/dynamodb/store.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../src/local/aws-local.js";
import { dynamoDBClient, startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { startSqsServer } from "../src/local/emulators/sqs-server.js";
import { countRequests } from "../src/observe/request-counter.js";
import { awsOutboxSender } from "../src/outbox/aws-sender.js";
import { relayOutbox } from "../src/outbox/relay.js";
import { meterCapacity } from "./capacity.js";
import { createTable } from "./tables.js";

const opts = new Command()
  .option("--events <n>", "events per variant", "200")
  .parse()
  .opts<{ events: string }>();
const events = Number(opts.events);

type Variant = { mode: "run" | "apply"; publish: "direct" | "stream relay" | "polling relay" };
const VARIANTS: Variant[] = (["run", "apply"] as const).flatMap((mode) =>
  (["direct", "stream relay", "polling relay"] as const).map((publish) => ({ mode, publish })),
);

/** A metered DynamoDB client: requests and capacity. */
function metered(endpoint: string) {
  const client = dynamoDBClient(endpoint);
  return { client, requests: countRequests(client), capacity: meterCapacity(client) };
}

async function measure(endpoint: string, sqs: SQSClient, queueUrl: string, v: Variant) {
  const tag = randomUUID().slice(0, 8);
  const handlerSide = metered(endpoint);
  const relaySide = metered(endpoint);
  const sqsRequests = countRequests(sqs as unknown as DynamoDBClient, `eonceSqs${tag}`);
  const [state, out, outboxTable] = [`ob-${tag}-state`, `ob-${tag}-out`, `ob-${tag}-outbox`];
  await createStateTable(handlerSide.client, { tableName: state });
  await createTable(handlerSide.client, out);
  await createOutboxTable(handlerSide.client, { tableName: outboxTable });
  const outbox = new DynamoDBOutbox({ client: relaySide.client, tableName: outboxTable });
  const store = new DynamoDBStore({ client: handlerSide.client, tableName: state });
  const sink = new DynamoDBFencedSink({ client: handlerSide.client, tableName: out });
  const guard = createGuard({ store, outbox });
  const destination = { kind: "sqs", queueUrl } as const;
  for (const m of [handlerSide, relaySide]) {
    m.requests.reset();
    m.capacity.reset();
  }
  sqsRequests.reset();

  for (let i = 0; i < events; i++) {
    const event = { subject: `order-${tag}-${i}`, identity: "created" };
    const message = { orderId: event.subject };
    const effect = async (ctx: Parameters<Parameters<typeof guard.run>[1]>[0]) => {
      sink.putAtCommit(ctx, { pk: event.subject, status: "charged" });
      if (v.publish === "direct")
        await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(message) }));
      else ctx.publish(destination, message);
    };
    const outcome =
      v.mode === "run"
        ? await guard.run(event, effect)
        : await guard.apply(event, (ctx) => {
            sink.putAtCommit(ctx, { pk: event.subject, status: "charged" });
            ctx.publish(destination, message);
          });
    if (outcome.status !== "processed") throw new Error(`${v.mode}/${v.publish}: ${outcome.status}`);
  }
  const sender = awsOutboxSender({ sqs });
  if (v.publish === "stream relay") {
    // The records the outbox table's stream would carry: one INSERT per entry, its new image.
    const scanned = await relaySide.client.send(
      new ScanCommand({ TableName: outboxTable, ConsistentRead: true }),
    );
    relaySide.requests.reset();
    relaySide.capacity.reset();
    const relay = outboxStreamHandler({ outbox, sender });
    const records = (scanned.Items ?? []).map((item, i) => ({
      eventName: "INSERT" as const,
      dynamodb: { NewImage: item as Record<string, AttributeValue>, SequenceNumber: String(i + 1) },
    }));
    const answer = await relay({ Records: records } as unknown as DynamoDBStreamEvent);
    if (answer.batchItemFailures.length > 0) throw new Error("the stream relay failed a record");
  } else if (v.publish === "polling relay") {
    for (;;) {
      const r = await relayOutbox({ reader: outbox, sender, batchSize: 25, owner: `bench-${tag}` });
      if (r.claimed === 0) break;
    }
  }
  const per = (n: number) => Math.round((n / events) * 100) / 100;
  return {
    mode: v.mode,
    publish: v.publish,
    handlerRequests: per(handlerSide.requests.total()),
    handlerWcu: per(handlerSide.capacity.wcu),
    relayRequests: per(relaySide.requests.total()),
    relayWcu: per(relaySide.capacity.wcu),
    relayRcu: per(relaySide.capacity.rcu),
    sqsRequests: per(sqsRequests.total()),
    relayCommands: relaySide.requests.counts,
  };
}

const ddb = await startDynamoDBLocal();
const sqsServer = await startSqsServer();
const sqs = new SQSClient({
  endpoint: sqsServer.endpoint,
  region: LOCAL_REGION,
  credentials: LOCAL_CREDENTIALS,
});
try {
  const queue = await sqs.send(new CreateQueueCommand({ QueueName: `outbox-bench-${Date.now()}` }));
  const rows = [];
  for (const v of VARIANTS) {
    if (v.mode === "apply" && v.publish === "direct") continue; // apply runs no handler that could send
    rows.push(await measure(ddb.endpoint, sqs, queue.QueueUrl ?? "", v));
  }
  console.log(`${events} events per row, one message each; per event:\n`);
  console.log(
    "| mode | message | DynamoDB requests (handler) | WCU (handler) | DynamoDB requests (relay) | WCU (relay) | RCU (relay) | SQS requests |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of rows)
    console.log(
      `| ${r.mode} | ${r.publish === "direct" ? "sent by the handler" : `outbox, ${r.publish}`} | ${r.handlerRequests} | ${r.handlerWcu} | ${r.relayRequests} | ${r.relayWcu} | ${r.relayRcu} | ${r.sqsRequests} |`,
    );
  for (const r of rows)
    if (r.publish === "polling relay")
      console.log(`\n${r.mode}, polling relay's requests: ${JSON.stringify(r.relayCommands)}`);
} finally {
  sqs.destroy();
  await sqsServer.stop();
  await ddb.stop();
}
