import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSMessageAttributes, SQSRecord } from "aws-lambda";
import { boolean, integer, nested, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import { FaultInjector, type FaultOptions, resolveFaults } from "../../sim/live/faults.js";
import type { Simulation } from "../../sim/live/simulation.js";
import { LOCAL_REGION } from "../aws-local.js";
import { isDuration, numberField } from "../fields.js";
import { invokeBatch } from "./batch-invoke.js";
import type { LocalFunction, LocalInvocationResult } from "./local-function.js";
import { PollLoop } from "./poll-loop.js";

/** A local event source mapping: the queue, the batch size, partial batch failures, concurrency. */
export interface SqsEventSourceOptions {
  queueUrl: string;
  queueArn: string;
  /** Messages per invocation, 1 to 10. Default 10. */
  batchSize?: number;
  /** Honour `{ batchItemFailures }` (ReportBatchItemFailures). Default true; off, any failure fails the batch. */
  reportBatchItemFailures?: boolean;
  /** Batches in flight at once (Lambda scales pollers up to the function's concurrency). Default: the function's. */
  maxConcurrentBatches?: number;
  /** Pause between empty receives. Default 50. */
  pollIntervalMs?: number;
  /** Delivery faults: duplicateRate (a batch delivered twice), reorderWindowMs (batches held back). */
  faults?: FaultOptions;
}

/** The event source mapping's options, field by field; `doc` is the help line of the `eonce run` flag. */
export const SQS_EVENT_SOURCE_OPTIONS = schemaFor<SqsEventSourceOptions>()({
  queueUrl: required(string()),
  queueArn: required(string()),
  batchSize: integer({ min: 1, max: 10, default: 10, doc: "SQS batch size" }),
  reportBatchItemFailures: boolean({ default: true }),
  maxConcurrentBatches: integer({ min: 1 }),
  pollIntervalMs: numberField("a non-negative number of ms", isDuration, { default: 50 }),
  faults: nested(resolveFaults),
});

/**
 * Lambda's SQS event source mapping: polls the queue, invokes the function with batches in Lambda's
 * SQS event shape (ApproximateReceiveCount and the rest of the attributes included), deletes what
 * succeeded and leaves the rest to come back after the visibility timeout (and, past the queue's
 * maxReceiveCount, to its dead-letter queue: fauxqs applies the redrive policy on receive).
 *
 * A failed, timed-out or crashed run fails the whole batch. A returned `batchItemFailures` fails only the
 * listed messages; an identifier that is empty or not in the batch fails the whole batch, as in Lambda.
 */
export class SqsEventSource {
  readonly #fn: LocalFunction;
  readonly #options: Required<Omit<SqsEventSourceOptions, "faults">>;
  readonly #faults: FaultInjector;
  readonly #client: SQSClient;
  readonly #sim: Simulation;
  #inFlight = 0;
  readonly #loop: PollLoop;
  #wake: (() => void) | undefined;

  constructor(fn: LocalFunction, options: SqsEventSourceOptions, client: SQSClient, sim: Simulation) {
    const { faults, ...o } = resolveOptions("SQS event source", SQS_EVENT_SOURCE_OPTIONS, options);
    this.#fn = fn;
    this.#options = { ...o, maxConcurrentBatches: o.maxConcurrentBatches ?? fn.concurrency };
    this.#faults = new FaultInjector(faults, sim.prng.fork(`sqs:${fn.name}:${o.queueArn}`));
    this.#client = client;
    this.#sim = sim;
    this.#loop = new PollLoop(sim.sleeper);
  }

  /** What `idle` names when this source does not drain. */
  describe(): string {
    return `the SQS event source of ${this.#fn.name} on ${this.#options.queueUrl}`;
  }

  get queueUrl(): string {
    return this.#options.queueUrl;
  }

  /** Starts polling the queue (once; a second call does nothing). */
  start(): void {
    this.#loop.start(() => this.#poll());
  }

  /** Stops polling; batches in flight finish on their own (the runtime's activity tracks them). */
  async stop(): Promise<void> {
    const stopped = this.#loop.stop();
    this.#wake?.();
    await stopped;
  }

  /** True when the queue holds no message (visible, in flight or delayed) and no batch is running. */
  async drained(): Promise<boolean> {
    if (this.#inFlight > 0) return false;
    const out = await this.#client.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.#options.queueUrl,
        AttributeNames: [
          "ApproximateNumberOfMessages",
          "ApproximateNumberOfMessagesNotVisible",
          "ApproximateNumberOfMessagesDelayed",
        ],
      }),
    );
    const a = out.Attributes ?? {};
    const total =
      Number(a.ApproximateNumberOfMessages ?? 0) +
      Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
    return total === 0 && this.#inFlight === 0;
  }

  async #poll(): Promise<void> {
    while (this.#loop.running) {
      if (this.#inFlight >= this.#options.maxConcurrentBatches) {
        await this.#pause();
        continue;
      }
      let messages: Message[];
      try {
        const out = await this.#client.send(
          new ReceiveMessageCommand({
            QueueUrl: this.#options.queueUrl,
            MaxNumberOfMessages: this.#options.batchSize,
            WaitTimeSeconds: 0,
            MessageSystemAttributeNames: ["All"],
            MessageAttributeNames: ["All"],
          }),
        );
        messages = out.Messages ?? [];
      } catch {
        // A stopping server or a transient error: Lambda's poller backs off and tries again too.
        messages = [];
      }
      if (messages.length === 0) {
        await this.#pause();
        continue;
      }
      const { delaysMs } = this.#faults.forDelivery();
      delaysMs.forEach((delayMs, copy) => {
        this.#inFlight++;
        void this.#sim.activity.track(
          this.#dispatch(messages, delayMs, copy > 0).finally(() => {
            this.#inFlight--;
            this.#wake?.();
          }),
        );
      });
    }
  }

  #pause(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.#options.pollIntervalMs);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.#wake === done) self.#wake = undefined;
        resolve();
      }
      this.#wake = done;
    });
  }

  async #dispatch(messages: Message[], delayMs: number, duplicate: boolean): Promise<void> {
    const records = messages.map((m) => toLambdaRecord(m, this.#options.queueArn));
    const run = await invokeBatch(this.#sim, this.#fn, {
      source: "sqs",
      event: { Records: records },
      records: records.map((r) => r.messageId),
      attempt: Math.max(...records.map((r) => Number(r.attributes.ApproximateReceiveCount) || 1)),
      delayMs,
      duplicate,
    });
    const done = this.#succeeded(run, records);
    if (done.length === 0) return;
    for (let i = 0; i < done.length; i += 10) {
      const entries = done
        .slice(i, i + 10)
        .map((r, j) => ({ Id: String(j), ReceiptHandle: r.receiptHandle }));
      try {
        await this.#client.send(
          new DeleteMessageBatchCommand({ QueueUrl: this.#options.queueUrl, Entries: entries }),
        );
      } catch {
        // Not deleted: the message comes back after its visibility timeout, as it would on AWS.
      }
    }
  }

  /** The records to delete after `run`. */
  #succeeded(run: LocalInvocationResult, records: SQSRecord[]): SQSRecord[] {
    if (run.status !== "succeeded") return [];
    if (!this.#options.reportBatchItemFailures) return records;
    const result = run.result as { batchItemFailures?: unknown } | null | undefined;
    const failures = result && typeof result === "object" ? result.batchItemFailures : undefined;
    if (failures === undefined || failures === null) return records;
    if (!Array.isArray(failures)) return [];
    const ids = new Set(records.map((r) => r.messageId));
    const failed = new Set<string>();
    for (const f of failures) {
      const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
      if (typeof id !== "string" || !ids.has(id)) return []; // Lambda fails the whole batch
      failed.add(id);
    }
    return records.filter((r) => !failed.has(r.messageId));
  }
}

/** One message in the shape Lambda passes to an SQS-triggered function. */
export function toLambdaRecord(m: Message, queueArn: string): SQSRecord {
  const sys = m.Attributes ?? {};
  const attributes: SQSRecord["attributes"] = {
    ApproximateReceiveCount: sys.ApproximateReceiveCount ?? "1",
    SentTimestamp: sys.SentTimestamp ?? String(Date.now()),
    SenderId: sys.SenderId ?? "000000000000",
    ApproximateFirstReceiveTimestamp: sys.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
  };
  if (sys.SequenceNumber) attributes.SequenceNumber = sys.SequenceNumber;
  if (sys.MessageGroupId) attributes.MessageGroupId = sys.MessageGroupId;
  if (sys.MessageDeduplicationId) attributes.MessageDeduplicationId = sys.MessageDeduplicationId;
  return {
    messageId: m.MessageId ?? "",
    receiptHandle: m.ReceiptHandle ?? "",
    body: m.Body ?? "",
    attributes,
    messageAttributes: toLambdaAttributes(m.MessageAttributes),
    md5OfBody: m.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(":")[3] || LOCAL_REGION,
  };
}

function toLambdaAttributes(attrs: Record<string, MessageAttributeValue> | undefined): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, v] of Object.entries(attrs ?? {})) {
    out[name] = {
      dataType: v.DataType ?? "String",
      stringListValues: [],
      binaryListValues: [],
      ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
      ...(v.BinaryValue !== undefined ? { binaryValue: Buffer.from(v.BinaryValue).toString("base64") } : {}),
    };
  }
  return out;
}
