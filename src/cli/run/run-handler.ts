import { PutObjectCommand } from "@aws-sdk/client-s3";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { createTableIfMissing } from "../../engines/dynamodb/schema.js";
import { DeliveryFailedError } from "../../lambda/errors.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../../local/aws-local.js";
import { currentInvocation } from "../../local/delivery/invocation-scope.js";
import {
  type AnyLambdaHandler,
  InjectedFailure,
  type LocalFunction,
  RuntimeStoppedError,
} from "../../local/delivery/local-function.js";
import { seesLocalTables } from "../../local/emulators/dynamodb-local.js";
import { freePort } from "../../local/emulators/free-port.js";
import { requireServers } from "../../local/emulators/requirements.js";
import { scanTable } from "../../local/emulators/scan-table.js";
import { LocalRuntime, setEnvironment } from "../../local/runtime.js";
import { DurableSession, loadDurable, withDurable } from "./durable.js";
import { eventBridgeEnvelope, snsEnvelope, sqsAttributes } from "./envelopes.js";
import { describeLoadError } from "./errors.js";
import { type Inputs, readInputs } from "./inputs.js";
import { type CheckInputs, checkInvariants } from "./invariants.js";
import { handlerPath, loadHandler } from "./load-handler.js";
import { needsDynamoDB, startLocalState, stateEnvironment } from "./local-state.js";
import { effectKeys } from "./messages.js";
import {
  type ResolvedRunOptions,
  type RunHandlerOptions,
  resolveRunOptions,
  STREAM_SOURCES,
} from "./options.js";
import { classify, type RunCapture } from "./outcomes.js";
import { buildRunReport, type RunReport } from "./report.js";
import { prepareState, readRunState } from "./state.js";
import type { StreamWiring } from "./streams.js";

export type { RunHandlerOptions, RunSource } from "./options.js";
export { RUN_SOURCES } from "./options.js";
export { formatRunReport, type RunReport } from "./report.js";

type Ports = {
  s3: number;
  sqs?: number;
  dynamodb?: number;
  lambda: number;
  kinesis?: number;
  payments?: number;
};

/** The function and, for an SQS source, its queue: what the inputs are fed to. */
interface Wiring {
  fn: LocalFunction;
  queueUrl?: string;
  dlqUrl?: string;
  /** A stream source's reader, and (DynamoDB Streams) each item's changing writes, to label its records with. */
  stream?: StreamWiring & { changes?: Map<string, string[]> };
}

/**
 * `eonce run`: the user's handler on the local runtime. Inputs are read and checked, and the handler
 * loaded, before any server starts (the ports are chosen first, so the handler's environment is right
 * when its module loads). Objects are uploaded to the input bucket (or messages sent), delivered through
 * the chosen source with the chosen faults, and when everything has settled the outcomes are classified
 * and the invariants checked.
 */
export async function runHandler(options: RunHandlerOptions, hooks: RunHooks = {}): Promise<RunReport> {
  const started = Date.now();
  const given = resolveRunOptions(options);
  const inputs = await readInputs(given);
  const viaSqs = given.source === "sqs" || given.source === "sns-sqs";
  // The Lambda endpoint always (in-process, no package): a durable dispatcher's Invoke must never reach AWS.
  const services = {
    sqs: viaSqs,
    s3: true,
    dynamodb: needsDynamoDB(given) || given.source === "dynamodb-streams",
    lambda: true,
    kinesis: given.source === "kinesis",
    payments: given.payments !== undefined,
  };
  LocalRuntime.preflight({ services, javaPath: given.javaPath, dynamodbEndpoint: given.dynamodbEndpoint });
  if (given.source === "dynamodb-streams") requireServers({ dynamodbStreams: true }, {});
  // A state server of the run's own where the state store names none (local-state.ts).
  const local = await startLocalState(options, given);
  try {
    const o = local.options === options ? given : resolveRunOptions(local.options);
    const endpoints = (runtime: LocalRuntime) => ({ ...endpointsOf(runtime), ...local.endpoints });
    return await runOn(o, inputs, services, started, {
      beforeStop: async (report, runtime) => hooks.beforeStop?.(report, endpoints(runtime)),
    });
  } finally {
    await local.stop();
  }
}

async function runOn(
  o: ResolvedRunOptions,
  inputs: Inputs,
  services: {
    sqs: boolean;
    s3: boolean;
    dynamodb: boolean;
    lambda: boolean;
    kinesis: boolean;
    payments: boolean;
  },
  started: number,
  hooks: { beforeStop(report: RunReport, runtime: LocalRuntime): Promise<void> },
): Promise<RunReport> {
  const ports: Ports = {
    s3: await freePort(),
    lambda: await freePort(),
    ...(services.sqs ? { sqs: await freePort() } : {}),
    ...(services.kinesis ? { kinesis: await freePort() } : {}),
    ...(services.payments ? { payments: await freePort() } : {}),
    ...(o.dynamodbEndpoint || !services.dynamodb ? {} : { dynamodb: await freePort() }),
  };
  const env = handlerEnvironment(o, ports);
  await checkSharedTables(o.dynamodbEndpoint, env);
  const restoreEnv = setEnvironment(env);
  let runtime: LocalRuntime | undefined;
  let durable: DurableSession | undefined;
  try {
    let handler: AnyLambdaHandler;
    try {
      ({ handler } = await loadHandler(o.handler));
    } catch (error) {
      throw new Error(describeLoadError(error, handlerPath(o.handler)));
    }
    const durableSetup = o.durable !== undefined ? await loadDurable(o.durable) : undefined;
    runtime = await LocalRuntime.start({
      seed: o.seed,
      handleSignals: o.handleSignals,
      crashedClaims: o.crashedClaims,
      services,
      ports,
      ...(o.dynamodbEndpoint ? { dynamodbEndpoint: o.dynamodbEndpoint } : {}),
      ...(o.javaPath ? { javaPath: o.javaPath } : {}),
    });
    runtime.payments?.injectFaults({ lostResponseRate: o.paymentsLostRate, failRate: o.paymentsFailRate });
    if (runtime.lambda)
      durable = await DurableSession.open(runtime.lambda, durableSetup, o.faults, runtime.prng);
    const report = await drive(runtime, o, inputs, handler, started, durable);
    await hooks.beforeStop(report, runtime);
    return report;
  } finally {
    restoreEnv();
    await durable?.close();
    await runtime?.stop();
  }
}

/** What the caller does between the report and the servers' stop (`--keep`: print, then wait for Ctrl-C). */
export interface RunHooks {
  beforeStop?(report: RunReport, endpoints: Record<string, string>): Promise<void>;
}

/** The servers' endpoints, by service. */
function endpointsOf(runtime: LocalRuntime): Record<string, string> {
  const env = LocalRuntime.envFor({
    dynamodb: runtime.dynamodb?.endpoint,
    s3: runtime.s3?.endpoint,
    sqs: runtime.sqs?.endpoint,
    lambda: runtime.lambda?.endpoint,
    kinesis: runtime.kinesis?.endpoint,
  });
  return Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith("AWS_ENDPOINT_URL")));
}

/** Where a run without DynamoDB points the handler's DynamoDB clients: nothing listens on port 1. */
const NO_DYNAMODB = "http://127.0.0.1:1";

/** The endpoints of the servers about to start, the run's own variables, then the user's. */
function handlerEnvironment(o: ResolvedRunOptions, ports: Ports): Record<string, string> {
  const local = (port: number | undefined) => (port ? `http://127.0.0.1:${port}` : undefined);
  const env: Record<string, string> = {};
  if (!o.logs) {
    env.POWERTOOLS_LOG_LEVEL = "SILENT";
    env.POWERTOOLS_METRICS_DISABLED = "true";
  }
  Object.assign(env, stateEnvironment(o));
  if (o.outputBucket) env.OUTPUT_BUCKET = o.outputBucket;
  return {
    ...LocalRuntime.envFor({
      // No DynamoDB in this run (needsDynamoDB): a handler's call is refused here, never sent to AWS.
      dynamodb: o.dynamodbEndpoint ?? local(ports.dynamodb) ?? NO_DYNAMODB,
      s3: local(ports.s3),
      sqs: local(ports.sqs),
      lambda: local(ports.lambda),
      kinesis: local(ports.kinesis),
      payments: local(ports.payments),
    }),
    ...env,
    ...o.env,
  };
}

/**
 * With `--dynamodb-endpoint`, an `--env` override may give the handler another key pair or region than the runtime's
 * (aws-local.ts). A DynamoDB Local started without `-sharedDb` keeps one database per key pair and region: the handler
 * would see none of the tables the run creates, and every call would fail with ResourceNotFoundException. Said up
 * front, in one line.
 */
async function checkSharedTables(endpoint: string | undefined, env: Record<string, string>): Promise<void> {
  const other = {
    accessKeyId: env.AWS_ACCESS_KEY_ID ?? LOCAL_CREDENTIALS.accessKeyId,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? LOCAL_CREDENTIALS.secretAccessKey,
    region: env.AWS_REGION ?? LOCAL_REGION,
  };
  if (!endpoint || (other.accessKeyId === LOCAL_CREDENTIALS.accessKeyId && other.region === LOCAL_REGION))
    return;
  if ((await seesLocalTables(endpoint, other)) !== false) return;
  throw new Error(
    `the DynamoDB at ${endpoint} keeps one database per access key and region (a DynamoDB Local started ` +
      `without -sharedDb), and the handler's key ${other.accessKeyId} in ${other.region} (--env) is not the ` +
      `run's (${LOCAL_CREDENTIALS.accessKeyId} in ${LOCAL_REGION}): it would not see the tables the run creates; ` +
      "start it with -sharedDb, or drop the --env override",
  );
}

async function drive(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  inputs: Inputs,
  handler: AnyLambdaHandler,
  startedMs: number,
  durable?: DurableSession,
): Promise<RunReport> {
  const capture: RunCapture = { inputs: new Map(), results: new Map(), reports: new Map(), errors: [] };
  const wiring = await wire(runtime, o, inputs, capturing(handler, capture));
  let sent = await feed(runtime, o, inputs, wiring);
  await runtime.idle({ timeoutMs: 600_000 });
  if (wiring.stream?.changes)
    sent = await (await streams()).labelStreamRecords(wiring.stream.reader, wiring.stream.changes);
  const stream = STREAM_SOURCES.includes(o.source);

  const deadLettered = await deadLetteredIds(runtime, wiring, stream);
  const classified = classify(runtime.trace.events, capture, {
    ...(inputs.kind === "objects" ? { bucket: o.bucket } : { messages: sent }),
    deadLettered,
    stream,
  });
  const endpoint = runtime.dynamodb?.endpoint ?? "";
  const bucket = inputs.kind === "objects" ? o.bucket : undefined;
  // The executions first: their steps write effects that --effects counts.
  const durableFound = await durable?.finish({ classified, bucket });
  const invariants = checkInvariants({
    classified,
    ...(inputs.kind === "objects" ? { bucket: o.bucket } : {}),
    ...(await countedEffects(runtime, o, inputs, sent)),
    ...(o.state ? { state: await readRunState(o.state, endpoint, startedMs) } : {}),
  });
  const report = buildRunReport({
    handler: o.handler,
    source: o.source,
    seed: o.seed,
    uploads: inputs.kind === "objects" ? inputs.objects.length : 0,
    bucket,
    messages: inputs.kind === "messages" ? inputs.messages.length : 0,
    events: runtime.trace.events,
    classified,
    invariants,
    errors: capture.errors,
    reports: new Map([...capture.results, ...capture.reports]),
    startedMs,
  });
  return withDurable(report, durableFound);
}

/** What I1 counts besides the reports: the `--effects` table's rows and the `--payments` API's charges. */
async function countedEffects(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  inputs: Inputs,
  sent: Awaited<ReturnType<typeof feed>>,
): Promise<Pick<CheckInputs, "effects" | "charges">> {
  const keys = (attribute: string) =>
    inputs.kind === "messages" ? { keys: effectKeys(sent, inputs.messages, attribute) } : {};
  const out: Pick<CheckInputs, "effects" | "charges"> = {};
  if (o.effects)
    out.effects = {
      ...o.effects,
      rows: await scanTable(runtime.dynamodbClient(), o.effects.table),
      ...keys(o.effects.attribute),
    };
  if (runtime.payments && o.payments !== undefined)
    out.charges = {
      table: "the payments API's charges",
      attribute: "orderId",
      rows: runtime.payments.charges.map((c) => ({ orderId: c.orderId ?? undefined })),
      ...keys(o.payments),
    };
  return out;
}

/**
 * The records that ended in a dead-letter queue: the SQS DLQ's messages, or the records of the batches a stream's
 * event source discarded (its on-failure destination gets only their metadata: the trace names them).
 */
async function deadLetteredIds(runtime: LocalRuntime, wiring: Wiring, stream: boolean): Promise<Set<string>> {
  if (stream)
    return new Set(runtime.trace.events.flatMap((e) => (e.type === "dead-letter" ? e.records : [])));
  return new Set(wiring.dlqUrl ? await runtime.drainMessageIds(wiring.dlqUrl) : []);
}

/** Creates the buckets, tables and queue, the function, and routes the source to it. */
async function wire(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  inputs: Inputs,
  handler: AnyLambdaHandler,
): Promise<Wiring> {
  if (inputs.kind === "objects") await runtime.createBucket(o.bucket);
  for (const t of o.tables ?? []) await createTableIfMissing(runtime.dynamodbClient(), t.name, t.hashKey);
  await prepareState(o.state, runtime.dynamodb?.endpoint ?? "");
  if (o.outputBucket) await runtime.createBucket(o.outputBucket);
  const fn = runtime.fn({
    name: "eonce-run",
    handler,
    timeoutMs: o.timeoutMs,
    concurrency: o.concurrency,
    faults: o.faults,
  });
  if (STREAM_SOURCES.includes(o.source))
    return { fn, stream: await (await streams()).wireStream(runtime, o, fn) };
  if (o.source === "direct" || o.source === "eventbridge") {
    if (inputs.kind === "objects")
      runtime.notify(o.bucket, { via: o.source, function: fn }, { faults: o.faults });
    return { fn };
  }
  const queue = await runtime.createQueue(o.fifo ? "eonce-input-queue.fifo" : "eonce-input-queue", {
    fifo: o.fifo,
    // Messages without a dedupId are deduplicated by content, as a FIFO producer without ids must be.
    contentBasedDeduplication: o.fifo,
    visibilityTimeoutS: o.visibilityTimeoutS,
    maxReceiveCount: o.maxReceiveCount,
  });
  if (inputs.kind === "objects") runtime.notify(o.bucket, { via: "sqs", queueUrl: queue.url });
  runtime.sqsEventSource(fn, {
    queueUrl: queue.url,
    queueArn: queue.arn,
    batchSize: o.batchSize ?? 10,
    faults: o.faults,
  });
  return { fn, queueUrl: queue.url, ...(queue.dlq ? { dlqUrl: queue.dlq.url } : {}) };
}

/**
 * Uploads the objects, or sends the messages. For messages, the correlation id each got (SQS message id or
 * EventBridge id) → its label; a FIFO duplicate maps once.
 */
async function feed(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  inputs: Inputs,
  { fn, queueUrl, stream }: Wiring,
): Promise<Map<string, string>> {
  const sent = new Map<string, string>();
  if (inputs.kind === "messages" && o.source === "kinesis")
    return (await streams()).feedKinesis(runtime, o, inputs.messages);
  if (inputs.kind === "messages" && stream) {
    stream.changes = await (await streams()).feedTable(runtime, o, inputs.messages);
    return sent;
  }
  if (inputs.kind === "objects") {
    const s3 = runtime.s3Client();
    for (const obj of inputs.objects) {
      await s3.send(new PutObjectCommand({ Bucket: o.bucket, Key: obj.key, Body: obj.body }));
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
  return sent;
}

/** The handler, recording each run's event, result, wrapper report and errors by run id. */
function capturing(handler: AnyLambdaHandler, capture: RunCapture): AnyLambdaHandler {
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

/** The stream sources' wiring, loaded only for them: the Kinesis client is an optional peer. */
function streams(): Promise<typeof import("./streams.js")> {
  return import("./streams.js");
}
