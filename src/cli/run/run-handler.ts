import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { type MessageAttributeValue, SendMessageCommand } from "@aws-sdk/client-sqs";
import { OptionsError } from "../../core/errors.js";
import { rejectUnknownKeys } from "../../core/options.js";
import { DeliveryFailedError } from "../../lambda/errors.js";
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from "../../local/aws-local.js";
import { currentInvocation } from "../../local/delivery/invocation-scope.js";
import {
  InjectedFailure,
  type LambdaHandler,
  RuntimeStoppedError,
} from "../../local/delivery/lambda-runner.js";
import { freePort } from "../../local/emulators/free-port.js";
import { scanTable } from "../../local/emulators/scan-table.js";
import { applyEnvironment, LocalRuntime } from "../../local/runtime.js";
import { type FaultOptions, resolveFaults } from "../../local/sim/faults.js";
import { createPrng } from "../../local/sim/prng.js";
import { createStateTable, createTableIfMissing } from "../../stores/dynamodb/schema.js";
import { describeLoadError, type ErrorSummary, summarizeErrors } from "./errors.js";
import { checkInvariants, type InvariantCheck } from "./invariants.js";
import { loadHandler } from "./load-handler.js";
import { checkMessagesFor, type ReplayMessage, readMessages } from "./messages.js";
import { generatedObjects, objectsFromFolder, type UploadObject, withReuploads } from "./objects.js";
import { classify, type DeliveryOutcome, gotThrough, RUN_OUTCOMES, type RunCapture } from "./outcomes.js";

/** How events reach the handler. `sns-sqs` (an SNS envelope in an SQS body) is for `messages` only. */
export type RunSource = "direct" | "sqs" | "sns-sqs" | "eventbridge";
export const RUN_SOURCES: readonly RunSource[] = ["direct", "sqs", "sns-sqs", "eventbridge"];

export interface RunHandlerOptions {
  /** `path:export`, like a Lambda handler setting. */
  handler: string;
  source: RunSource;
  /** Upload every file of this folder … */
  from?: string;
  /** … or this many generated objects (default 10) … */
  generate?: number;
  /** … or replay these application messages (a JSONL file or a folder, see readMessages) instead. */
  messages?: string;
  /** Messages through a FIFO queue (`sqs`, `sns-sqs`): every message needs a groupId. */
  fifo?: boolean;
  /** Then upload this many of the keys again (new events of the same keys). */
  reuploads?: number;
  /** Input bucket. Default `eonce-input`. */
  bucket?: string;
  /** DynamoDB tables to create (`hashKey` default `pk`). */
  tables?: { name: string; hashKey: string }[];
  /** A guard state table to create (and read for I2/I3); sets STATE_TABLE unless `env` has it. */
  stateTable?: string;
  /** An output bucket to create; sets OUTPUT_BUCKET unless `env` has it. */
  outputBucket?: string;
  /** Rows of this table carry each event's sequencer (messages: its correlation id) in `attribute`: for I1. */
  effects?: { table: string; attribute: string };
  /** The handler's environment (on top of the endpoints). */
  env?: Record<string, string>;
  timeoutMs?: number;
  concurrency?: number;
  /** SQS source: batch size, queue visibility timeout (s), receives before the DLQ. */
  batchSize?: number;
  visibilityTimeoutS?: number;
  maxReceiveCount?: number;
  seed?: number;
  faults?: FaultOptions;
  /** Let Powertools logs and metrics through (default: silenced). */
  logs?: boolean;
  /** Use this DynamoDB instead of starting DynamoDB Local (tests). */
  dynamodbEndpoint?: string;
  /** Java for DynamoDB Local. Default `java` on the PATH. */
  javaPath?: string;
  handleSignals?: boolean;
}

const OPTION_KEYS = [
  "handler",
  "source",
  "from",
  "generate",
  "messages",
  "fifo",
  "reuploads",
  "bucket",
  "tables",
  "stateTable",
  "outputBucket",
  "effects",
  "env",
  "timeoutMs",
  "concurrency",
  "batchSize",
  "visibilityTimeoutS",
  "maxReceiveCount",
  "seed",
  "faults",
  "logs",
  "dynamodbEndpoint",
  "javaPath",
  "handleSignals",
];

export interface RunReport {
  handler: string;
  source: RunSource;
  seed: number;
  /** Objects uploaded (S3 runs; 0 for message runs). */
  uploads: number;
  /** Messages sent (message runs; 0 for S3 runs). */
  messages: number;
  /** Distinct events: S3 events, or messages (FIFO deduplication can merge two). */
  events: number;
  deliveries: number;
  handlerRuns: number;
  runs: Record<string, number>;
  outcomes: Record<DeliveryOutcome, number>;
  /** Events no delivery of which succeeded: dead-lettered (found in the DLQ) or lost. */
  unsuccessful: { total: number; deadLettered: number; lost: number };
  /** The handler's errors, grouped: the most frequent first. */
  errors: ErrorSummary[];
  warnings: string[];
  invariants: InvariantCheck[];
  /** No invariant failed and every event got through: the exit code is 0 only then. */
  ok: boolean;
  durationMs: number;
}

type Inputs = { kind: "objects"; objects: UploadObject[] } | { kind: "messages"; messages: ReplayMessage[] };

/**
 * `eonce run`: the user's handler on the local runtime. Inputs are read and checked, and the handler
 * loaded, before any server starts (the ports are chosen first, so the handler's environment is right
 * when its module loads). Objects are uploaded to the input bucket (or messages sent), delivered through
 * the chosen source with the chosen faults, and when everything has settled the outcomes are classified
 * and the invariants checked.
 */
export async function runHandler(o: RunHandlerOptions): Promise<RunReport> {
  const started = Date.now();
  validate(o);
  const seed = o.seed ?? 1;
  const bucket = o.bucket ?? "eonce-input";
  const inputs = await readInputs(o, seed);
  const viaSqs = o.source === "sqs" || o.source === "sns-sqs";
  const services = { sqs: viaSqs, s3: true, dynamodb: true };
  LocalRuntime.preflight({ services, javaPath: o.javaPath, dynamodbEndpoint: o.dynamodbEndpoint });

  const ports = {
    s3: await freePort(),
    ...(viaSqs ? { sqs: await freePort() } : {}),
    ...(o.dynamodbEndpoint ? {} : { dynamodb: await freePort() }),
  };
  const local = (port: number | undefined) => (port ? `http://127.0.0.1:${port}` : undefined);
  const env: Record<string, string> = {};
  if (!o.logs) {
    env.POWERTOOLS_LOG_LEVEL = "SILENT";
    env.POWERTOOLS_METRICS_DISABLED = "true";
  }
  if (o.stateTable) env.STATE_TABLE = o.stateTable;
  if (o.outputBucket) env.OUTPUT_BUCKET = o.outputBucket;
  const restoreEnv = applyEnvironment({
    ...LocalRuntime.envFor({
      dynamodb: o.dynamodbEndpoint ?? local(ports.dynamodb),
      s3: local(ports.s3),
      sqs: local(ports.sqs),
    }),
    ...env,
    ...o.env,
  });
  let runtime: LocalRuntime | undefined;
  try {
    let handler: LambdaHandler;
    try {
      ({ handler } = await loadHandler(o.handler));
    } catch (error) {
      throw new Error(describeLoadError(error, handlerPath(o.handler)));
    }
    runtime = await LocalRuntime.start({
      seed,
      handleSignals: o.handleSignals ?? false,
      services,
      ports,
      ...(o.dynamodbEndpoint ? { dynamodbEndpoint: o.dynamodbEndpoint } : {}),
      ...(o.javaPath ? { javaPath: o.javaPath } : {}),
    });
    return await drive(runtime, o, inputs, handler, { seed, bucket, started });
  } finally {
    restoreEnv();
    await runtime?.stop();
  }
}

async function drive(
  runtime: LocalRuntime,
  o: RunHandlerOptions,
  inputs: Inputs,
  handler: LambdaHandler,
  ctx: { seed: number; bucket: string; started: number },
): Promise<RunReport> {
  const { bucket } = ctx;
  const ddb = runtime.dynamodbClient();
  if (inputs.kind === "objects") await runtime.createBucket(bucket);
  for (const t of o.tables ?? []) await createTableIfMissing(ddb, t.name, t.hashKey);
  if (o.stateTable) await createStateTable(ddb, { tableName: o.stateTable });
  if (o.outputBucket) await runtime.createBucket(o.outputBucket);

  const capture: RunCapture = { inputs: new Map(), results: new Map(), reports: new Map(), errors: [] };
  const fn = runtime.fn({
    name: "eonce-run",
    handler: capturing(handler, capture),
    timeoutMs: o.timeoutMs ?? 3000,
    concurrency: o.concurrency ?? 10,
    faults: o.faults,
  });
  let dlqUrl: string | undefined;
  let queueUrl: string | undefined;
  if (o.source === "sqs" || o.source === "sns-sqs") {
    const fifo = o.fifo ?? false;
    const queue = await runtime.createQueue(fifo ? "eonce-input-queue.fifo" : "eonce-input-queue", {
      fifo,
      // Messages without a dedupId are deduplicated by content, as a FIFO producer without ids must be.
      contentBasedDeduplication: fifo,
      visibilityTimeoutS: o.visibilityTimeoutS ?? 30,
      maxReceiveCount: o.maxReceiveCount ?? 5,
    });
    queueUrl = queue.url;
    dlqUrl = queue.dlq?.url;
    if (inputs.kind === "objects") runtime.notify(bucket, { via: "sqs", queueUrl: queue.url });
    runtime.sqsEventSource(fn, {
      queueUrl: queue.url,
      queueArn: queue.arn,
      batchSize: o.batchSize ?? 10,
      faults: o.faults,
    });
  } else if (inputs.kind === "objects") {
    runtime.notify(bucket, { via: o.source, function: fn }, { faults: o.faults });
  }

  // Message runs: correlation id (SQS message id or EventBridge id) → label; a FIFO duplicate maps once.
  const sent = new Map<string, string>();
  if (inputs.kind === "objects") {
    const s3 = runtime.s3Client();
    for (const obj of inputs.objects) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: obj.key, Body: obj.body }));
    }
  } else if (queueUrl) {
    const sqs = runtime.sqsClient();
    for (const m of inputs.messages) {
      const out = await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: o.source === "sns-sqs" ? snsEnvelope(m) : m.body,
          ...(m.groupId ? { MessageGroupId: m.groupId } : {}),
          ...(m.dedupId ? { MessageDeduplicationId: m.dedupId } : {}),
          ...(m.attributes && o.source === "sqs" ? { MessageAttributes: sqsAttributes(m.attributes) } : {}),
        }),
      );
      if (out.MessageId && !sent.has(out.MessageId)) sent.set(out.MessageId, m.label);
    }
  } else {
    const invoker = runtime.asyncInvoker(fn, "eventbridge", { faults: o.faults });
    for (const m of inputs.messages) {
      const event = eventBridgeEnvelope(m);
      sent.set(event.id, m.label);
      invoker.deliver(event, [event.id]);
    }
  }
  await runtime.idle({ timeoutMs: 600_000 });

  const deadLettered = new Set(dlqUrl ? await runtime.drainMessageIds(dlqUrl) : []);
  const events = runtime.trace.events;
  const classified = classify(events, capture, {
    ...(inputs.kind === "objects" ? { bucket } : { messages: sent }),
    deadLettered,
  });
  const invariants = checkInvariants({
    classified,
    ...(inputs.kind === "objects" ? { bucket } : {}),
    ...(o.effects ? { effects: { ...o.effects, rows: await scanTable(ddb, o.effects.table) } } : {}),
    ...(o.stateTable ? { state: { table: o.stateTable, items: await scanTable(ddb, o.stateTable) } } : {}),
  });
  const runs: Record<string, number> = {};
  let deliveries = 0;
  let handlerRuns = 0;
  let missedFaultPoint = 0;
  for (const e of events) {
    if (e.type === "run") {
      handlerRuns++;
      runs[e.status] = (runs[e.status] ?? 0) + 1;
      if (e.faultPointMissed) missedFaultPoint++;
    }
    if (e.type === "delivery") deliveries += e.records.length;
  }
  const outcomes = Object.fromEntries(RUN_OUTCOMES.map((k) => [k, 0])) as Record<DeliveryOutcome, number>;
  for (const outcome of classified.perDelivery) outcomes[outcome]++;
  const unfinished = [...classified.perEvent.values()].filter((e) => !gotThrough(e));
  const dead = unfinished.filter((e) => e.outcomes.includes("dead-lettered")).length;
  const warnings: string[] = [];
  // A wrapper for another trigger refuses every invocation: say so before anything else.
  const mismatch = capture.errors.find(
    (e) =>
      e instanceof Error && /got (an SQS batch|a direct S3\/EventBridge invocation); use /.test(e.message),
  );
  if (mismatch instanceof Error) {
    warnings.push(`the handler's wrapper does not fit --source ${o.source}: ${mismatch.message}`);
  }
  if (missedFaultPoint > 0) {
    warnings.push(
      `${missedFaultPoint} run(s) drew slowness or a crash but reached no faultPoint(): it struck after the handler ` +
        "returned instead. Call faultPoint() before the effect (a bundled handler needs effectively-once 0.1.1+)",
    );
  }
  const unsuccessful = { total: unfinished.length, deadLettered: dead, lost: unfinished.length - dead };
  return {
    handler: o.handler,
    source: o.source,
    seed: ctx.seed,
    uploads: inputs.kind === "objects" ? inputs.objects.length : 0,
    messages: inputs.kind === "messages" ? inputs.messages.length : 0,
    events: classified.perEvent.size,
    deliveries,
    handlerRuns,
    runs,
    outcomes,
    unsuccessful,
    errors: summarizeErrors(capture.errors),
    warnings,
    invariants,
    ok: unsuccessful.total === 0 && !invariants.some((c) => c.status === "fail"),
    durationMs: Date.now() - ctx.started,
  };
}

/** Eager checks: unknown keys, exclusive inputs, sources that fit the inputs. */
function validate(o: RunHandlerOptions): void {
  rejectUnknownKeys("eonce run", o, OPTION_KEYS);
  if (!RUN_SOURCES.includes(o.source)) {
    throw new OptionsError(
      `eonce run: source must be one of ${RUN_SOURCES.join(", ")}, got ${String(o.source)}`,
    );
  }
  const given = [o.from !== undefined, o.generate !== undefined, o.messages !== undefined].filter(Boolean);
  if (given.length > 1) throw new OptionsError("eonce run: use one of --from, --generate and --messages");
  if (o.messages !== undefined) {
    if (o.source === "direct") {
      throw new OptionsError("eonce run: --messages go through --source sqs, sns-sqs or eventbridge");
    }
    if (o.reuploads) throw new OptionsError("eonce run: --reupload is for uploads, not --messages");
    if (o.effects)
      throw new OptionsError("eonce run: --effects counts rows per S3 event; not with --messages");
  } else if (o.source === "sns-sqs") {
    throw new OptionsError("eonce run: --source sns-sqs replays --messages (S3 → SNS → SQS is not modelled)");
  }
  if (o.fifo && o.messages === undefined) throw new OptionsError("eonce run: --fifo is for --messages");
  if (o.fifo && o.source === "eventbridge") throw new OptionsError("eonce run: --fifo needs an SQS source");
  resolveFaults(o.faults);
}

async function readInputs(o: RunHandlerOptions, seed: number): Promise<Inputs> {
  if (o.messages !== undefined) {
    const messages = await readMessages(o.messages);
    checkMessagesFor(messages, o.fifo ?? false, o.source);
    if (o.source === "eventbridge") for (const m of messages) eventBridgeDetail(m);
    return { kind: "messages", messages };
  }
  if (o.from !== undefined) {
    const info = await stat(o.from).catch(() => undefined);
    if (!info?.isDirectory()) throw new OptionsError(`--from: no such folder: ${o.from}`);
  }
  const objects = o.from !== undefined ? await objectsFromFolder(o.from) : generatedObjects(o.generate ?? 10);
  return {
    kind: "objects",
    objects: withReuploads(objects, o.reuploads ?? 0, createPrng(seed).fork("objects")),
  };
}

/** The module path of a `path:export` spec (as loadHandler reads it), to name it in load errors. */
function handlerPath(spec: string): string {
  const colon = spec.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !/^[A-Za-z]:[\\/]/.test(spec));
  const file = hasExport ? spec.slice(0, colon) : spec;
  return isAbsolute(file) ? file : resolve(file);
}

/** An SNS envelope as SQS receives it with raw message delivery off. */
function snsEnvelope(m: ReplayMessage): string {
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

function sqsAttributes(a: Record<string, string | number>): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    Object.entries(a).map(([k, v]) => [
      k,
      typeof v === "number"
        ? { DataType: "Number", StringValue: String(v) }
        : { DataType: "String", StringValue: v },
    ]),
  );
}

function eventBridgeDetail(m: ReplayMessage): Record<string, unknown> {
  let detail: unknown;
  try {
    detail = JSON.parse(m.body);
  } catch {
    detail = undefined;
  }
  if (typeof detail !== "object" || detail === null || Array.isArray(detail)) {
    throw new OptionsError(`${m.label}: an EventBridge event's detail must be a JSON object`);
  }
  return detail as Record<string, unknown>;
}

/** An application event as EventBridge hands it to a rule's Lambda target. */
function eventBridgeEnvelope(m: ReplayMessage) {
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

/** The handler, recording each run's event, result, wrapper report and errors by run id. */
function capturing(handler: LambdaHandler, capture: RunCapture): LambdaHandler {
  return async (event: never, context) => {
    const scope = currentInvocation();
    const runId = scope?.runId ?? "";
    capture.inputs.set(runId, event);
    let swallowed = false;
    if (scope) {
      scope.report = (report) => capture.reports.set(runId, report);
      scope.handlerError = (error) => {
        swallowed = true;
        capture.errors.push(error);
      };
    }
    try {
      const result = await handler(event, context);
      capture.results.set(runId, result);
      return result;
    } catch (error) {
      // The runtime's own failures are not the handler's; a wrapper's summary of errors it handed over
      // already (DeliveryFailedError) would count them twice.
      const own = error instanceof InjectedFailure || error instanceof RuntimeStoppedError;
      if (!own && !(swallowed && error instanceof DeliveryFailedError)) capture.errors.push(error);
      throw error;
    }
  };
}

/** Formats a run report for the terminal. */
export function formatRunReport(r: RunReport): string {
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ") || "none";
  const inputs =
    r.messages > 0
      ? `messages       ${r.messages} (${r.events} events)`
      : `uploads        ${r.uploads} (${r.events} S3 events)`;
  const lines = [
    `eonce run ${r.handler} — source ${r.source}, seed ${r.seed}, ${(r.durationMs / 1000).toFixed(1)} s`,
    inputs,
    `deliveries     ${r.deliveries}`,
    `handler runs   ${r.handlerRuns}: ${list(r.runs)}`,
    `outcomes       ${list(r.outcomes)}`,
  ];
  r.errors.forEach((e, i) => {
    lines.push(`${(i === 0 ? "errors" : "").padEnd(15)}${e.count}× ${e.error}${e.at ? ` (at ${e.at})` : ""}`);
  });
  for (const w of r.warnings) lines.push(`warning        ${w}`);
  lines.push("invariants");
  lines.push(
    ...r.invariants.map((c) => `  ${c.id} ${c.title.padEnd(48)} ${c.status.padEnd(11)} ${c.detail}`),
  );
  const failed = r.invariants.filter((c) => c.status === "fail").map((c) => c.id);
  const u = r.unsuccessful;
  const why = [
    ...(u.total > 0
      ? [
          `${u.total}/${r.events} events never succeeded` +
            ` (${[u.deadLettered ? `${u.deadLettered} dead-lettered` : "", u.lost ? `${u.lost} lost` : ""].filter(Boolean).join(", ")})`,
        ]
      : []),
    ...(failed.length ? [`${failed.join(", ")} failed`] : []),
  ];
  const first = r.errors[0];
  lines.push(
    r.ok
      ? "result         ok"
      : `result         FAIL: ${why.join("; ")}${first ? `; first error: ${first.error}${first.at ? ` (at ${first.at})` : ""}` : ""}`,
  );
  return lines.join("\n");
}
