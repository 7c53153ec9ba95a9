import { readFile } from "node:fs/promises";
import { type Command, Option } from "commander";
import { describeError, describeText } from "../core/describe-value.js";
import { EffectivelyOnceError } from "../core/errors.js";
import type { Delivery, DynamoDBChangeEvent, KinesisRecordEvent, NormalizedEvent } from "../core/event.js";
import { type DeliveryUnit, type ParseOptions, parseInvocation } from "../sources/index.js";

/** 0: every unit parsed; 1: some units are malformed (all still printed); 2: the input is unreadable. */
export type InspectExitCode = 0 | 1 | 2;

export interface InspectResult {
  /** One JSON line per normalized event, and one per malformed unit. */
  lines: string[];
  exitCode: InspectExitCode;
  /** One-line explanation when the input could not be inspected at all (exit code 2). */
  stderr?: string;
}

/** The logic of `eonce inspect`, without I/O: invocation JSON text in, JSON lines out. */
export function inspectText(text: string, options: ParseOptions = {}): InspectResult {
  let input: unknown;
  try {
    // Editors on Windows save UTF-8 with a byte order mark; JSON.parse rejects it.
    input = JSON.parse(text.startsWith("\uFEFF") ? text.slice(1) : text);
  } catch (e) {
    return unreadable(`input is not JSON: ${describeError(e)}`);
  }
  let units: DeliveryUnit[];
  try {
    units = parseInvocation(input, options);
  } catch (e) {
    if (e instanceof EffectivelyOnceError) return unreadable(e.message);
    throw e;
  }
  const lines: string[] = [];
  let exitCode: InspectExitCode = 0;
  for (const unit of units) {
    for (const event of unit.events) lines.push(JSON.stringify(eventLine(unit.delivery, event)));
    if (unit.error) {
      exitCode = 1;
      lines.push(
        JSON.stringify({
          error: unit.error.message,
          type: unit.error.name,
          path: unit.error.path,
          envelope: unit.delivery.envelope,
          recordIndex: unit.delivery.recordIndex,
          correlationId: unit.delivery.correlationId,
        }),
      );
    }
  }
  return { lines, exitCode };
}

function eventLine(delivery: Delivery, event: NormalizedEvent): Record<string, unknown> {
  const common = {
    kind: event.kind,
    envelope: delivery.envelope,
    recordIndex: delivery.recordIndex,
    correlationId: delivery.correlationId,
    ...(delivery.sqs ? { sqsMessageId: delivery.sqs.messageId } : {}),
  };
  switch (event.kind) {
    case "s3":
      // Absent optional fields print as null so every S3 line has the same keys.
      return {
        ...common,
        bucket: event.bucket,
        key: event.key,
        versionId: event.versionId ?? null,
        operation: event.operation,
        eventName: event.eventName,
        eventTime: event.eventTime,
        sequencer: event.sequencer ?? null,
        position: event.position ?? null,
        subject: event.subject,
        identity: event.identity,
        size: event.size ?? null,
        etag: event.etag ?? null,
        requestId: event.requestId ?? null,
      };
    case "s3-test":
      return {
        ...common,
        bucket: event.bucket,
        requestId: event.requestId ?? null,
        eventTime: event.eventTime ?? null,
      };
    case "message":
      return { ...common, messageId: event.messageId, body: event.body };
    case "kinesis":
    case "dynamodb":
      return { ...common, ...streamLine(delivery, event) };
  }
}

function streamLine(
  delivery: Delivery,
  event: KinesisRecordEvent | DynamoDBChangeEvent,
): Record<string, unknown> {
  if (event.kind === "kinesis") {
    return {
      streamName: event.streamName,
      shardId: delivery.stream?.shardId ?? null,
      partitionKey: event.partitionKey,
      sequenceNumber: event.sequenceNumber,
      position: event.position,
      dataBytes: event.data.length,
      json: "json" in event,
    };
  }
  // Images hold sets, binaries and exact numbers, which JSON does not carry: the item and the change only.
  return {
    eventName: event.eventName,
    tableName: event.tableName,
    item: event.item,
    sequenceNumber: event.sequenceNumber,
    position: event.position,
    viewType: event.viewType,
    ttlExpired: event.ttlExpired,
  };
}

/** stderr is one line: JSON.parse messages quote the input, newlines included. */
function unreadable(reason: string): InspectResult {
  return { lines: [], exitCode: 2, stderr: `eonce inspect: ${describeText(reason, 1000)}` };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin)
    chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8");
}

interface InspectCliOptions {
  messages: "accept" | "reject";
  correlationAttribute?: string;
}

export function registerInspect(program: Command): void {
  program
    .command("inspect")
    .description(
      "print the normalized events of a Lambda invocation payload (S3, SQS, SNS-in-SQS, EventBridge) as JSON lines",
    )
    .argument("<file>", 'invocation JSON file, or "-" for stdin')
    .addOption(
      new Option("--messages <mode>", "SQS bodies that are not S3 events: reject or accept as messages")
        .choices(["reject", "accept"])
        .default("reject"),
    )
    .option("--correlation-attribute <name>", "SQS message attribute to use as correlation id")
    .action(async (file: string, opts: InspectCliOptions) => {
      let text: string;
      try {
        text = file === "-" ? await readStdin() : await readFile(file, "utf8");
      } catch (e) {
        process.stderr.write(
          `eonce inspect: cannot read ${file === "-" ? "stdin" : file}: ${describeError(e)}\n`,
        );
        process.exitCode = 2;
        return;
      }
      const options: ParseOptions = { messages: opts.messages };
      if (opts.correlationAttribute !== undefined) options.correlationAttribute = opts.correlationAttribute;
      const result = inspectText(text, options);
      if (result.lines.length > 0) process.stdout.write(`${result.lines.join("\n")}\n`);
      if (result.stderr) process.stderr.write(`${result.stderr}\n`);
      process.exitCode = result.exitCode;
    });
}
