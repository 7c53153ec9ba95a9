import { PutObjectCommand } from "@aws-sdk/client-s3";
import { createStateTable, createTableIfMissing } from "../../stores/dynamodb/schema.js";
import type { FaultOptions } from "../faults.js";
import { currentInvocation } from "../invocation-scope.js";
import type { LambdaHandler } from "../lambda-runner.js";
import { createPrng } from "../prng.js";
import { LocalRuntime } from "../runtime.js";
import { scanTable } from "../scan-table.js";
import { checkInvariants, type InvariantCheck } from "./invariants.js";
import { loadHandler } from "./load-handler.js";
import { generatedObjects, objectsFromFolder, type UploadObject, withReuploads } from "./objects.js";
import { classify, type DeliveryOutcome, type RunCapture } from "./outcomes.js";

export type RunSource = "direct" | "sqs" | "eventbridge";

export interface RunHandlerOptions {
  /** `path:export`, like a Lambda handler setting. */
  handler: string;
  source: RunSource;
  /** Upload every file of this folder … */
  from?: string;
  /** … or this many generated objects (default 10). */
  generate?: number;
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
  /** Rows of this table carry each event's sequencer in `attribute`: counted for I1. */
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
  handleSignals?: boolean;
}

export interface RunReport {
  handler: string;
  source: RunSource;
  seed: number;
  uploads: number;
  events: number;
  deliveries: number;
  handlerRuns: number;
  runs: Record<string, number>;
  outcomes: Record<DeliveryOutcome, number>;
  invariants: InvariantCheck[];
  durationMs: number;
}

/**
 * `eonce run`: the user's handler on the local runtime. Objects are uploaded to the input bucket, their
 * notifications delivered through the chosen source with the chosen faults, and when everything has
 * settled the outcomes are classified and the invariants checked.
 */
export async function runHandler(o: RunHandlerOptions): Promise<RunReport> {
  const started = Date.now();
  const seed = o.seed ?? 1;
  const bucket = o.bucket ?? "eonce-input";
  const runtime = await LocalRuntime.start({
    seed,
    handleSignals: o.handleSignals ?? false,
    ...(o.dynamodbEndpoint ? { dynamodbEndpoint: o.dynamodbEndpoint } : {}),
    services: { sqs: o.source === "sqs" },
  });
  let restoreEnv: (() => void) | undefined;
  try {
    const ddb = runtime.dynamodbClient();
    await runtime.createBucket(bucket);
    for (const t of o.tables ?? []) await createTableIfMissing(ddb, t.name, t.hashKey);
    if (o.stateTable) await createStateTable(ddb, { tableName: o.stateTable });
    if (o.outputBucket) await runtime.createBucket(o.outputBucket);
    const env: Record<string, string> = {};
    if (!o.logs) {
      env.POWERTOOLS_LOG_LEVEL = "SILENT";
      env.POWERTOOLS_METRICS_DISABLED = "true";
    }
    if (o.stateTable) env.STATE_TABLE = o.stateTable;
    if (o.outputBucket) env.OUTPUT_BUCKET = o.outputBucket;
    restoreEnv = runtime.applyEnv({ ...env, ...o.env });

    // Imported only now: handler modules read their environment when they load.
    const { handler } = await loadHandler(o.handler);
    const capture: RunCapture = { inputs: new Map(), results: new Map() };
    const fn = runtime.fn({
      name: "eonce-run",
      handler: capturing(handler, capture),
      timeoutMs: o.timeoutMs ?? 3000,
      concurrency: o.concurrency ?? 10,
      faults: o.faults,
    });
    if (o.source === "sqs") {
      const queue = await runtime.createQueue("eonce-input-queue", {
        visibilityTimeoutS: o.visibilityTimeoutS ?? 30,
        maxReceiveCount: o.maxReceiveCount ?? 5,
      });
      runtime.notify(bucket, { via: "sqs", queueUrl: queue.url });
      runtime.sqsEventSource(fn, {
        queueUrl: queue.url,
        queueArn: queue.arn,
        batchSize: o.batchSize ?? 10,
        faults: o.faults,
      });
    } else {
      runtime.notify(bucket, { via: o.source, function: fn }, { faults: o.faults });
    }

    const objects: UploadObject[] = withReuploads(
      o.from ? await objectsFromFolder(o.from) : generatedObjects(o.generate ?? 10),
      o.reuploads ?? 0,
      createPrng(seed).fork("objects"),
    );
    const s3 = runtime.s3Client();
    for (const obj of objects) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: obj.key, Body: obj.body }));
    }
    await runtime.idle({ timeoutMs: 600_000 });

    const events = runtime.trace.events;
    const classified = classify(events, capture, bucket);
    const invariants = checkInvariants({
      classified,
      bucket,
      ...(o.effects ? { effects: { ...o.effects, rows: await scanTable(ddb, o.effects.table) } } : {}),
      ...(o.stateTable ? { state: { table: o.stateTable, items: await scanTable(ddb, o.stateTable) } } : {}),
    });
    const runs: Record<string, number> = {};
    let deliveries = 0;
    let handlerRuns = 0;
    for (const e of events) {
      if (e.type === "run") {
        handlerRuns++;
        runs[e.status] = (runs[e.status] ?? 0) + 1;
      }
      if (e.type === "delivery") deliveries += e.records.length;
    }
    const outcomes = Object.fromEntries(OUTCOMES.map((k) => [k, 0])) as Record<DeliveryOutcome, number>;
    for (const outcome of classified.perDelivery) outcomes[outcome]++;
    return {
      handler: o.handler,
      source: o.source,
      seed,
      uploads: objects.length,
      events: classified.perEvent.size,
      deliveries,
      handlerRuns,
      runs,
      outcomes,
      invariants,
      durationMs: Date.now() - started,
    };
  } finally {
    restoreEnv?.();
    await runtime.stop();
  }
}

const OUTCOMES: DeliveryOutcome[] = [
  "processed",
  "duplicate",
  "stale",
  "lease-lost",
  "malformed",
  "test-event",
  "acknowledged",
  "failed-will-retry",
  "dead-lettered",
];

/** The handler, recording each run's event and result by run id (for classifying outcomes later). */
function capturing(handler: LambdaHandler, capture: RunCapture): LambdaHandler {
  return async (event: never, context) => {
    const runId = currentInvocation()?.runId ?? "";
    capture.inputs.set(runId, event);
    const result = await handler(event, context);
    capture.results.set(runId, result);
    return result;
  };
}

/** Formats a run report for the terminal. */
export function formatRunReport(r: RunReport): string {
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ") || "none";
  const lines = [
    `eonce run ${r.handler} — source ${r.source}, seed ${r.seed}, ${(r.durationMs / 1000).toFixed(1)} s`,
    `uploads        ${r.uploads} (${r.events} S3 events)`,
    `deliveries     ${r.deliveries}`,
    `handler runs   ${r.handlerRuns}: ${list(r.runs)}`,
    `outcomes       ${list(r.outcomes)}`,
    "invariants",
    ...r.invariants.map((c) => `  ${c.id} ${c.title.padEnd(48)} ${c.status.padEnd(11)} ${c.detail}`),
  ];
  return lines.join("\n");
}
