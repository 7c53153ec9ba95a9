import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import { CreateBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import {
  boolean,
  custom,
  integer,
  oneOf,
  type Resolved,
  resolveOptions,
  schemaFor,
  string,
} from "../core/options.js";
import type { Activity } from "../sim/live/activity.js";
import { createSimulation, type Simulation } from "../sim/live/simulation.js";
import type { Sleeper } from "../sim/live/sleeper.js";
import type { SourceKind, Trace } from "../sim/live/trace.js";
import type { Prng } from "../sim/prng.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "./aws-local.js";
import { type AsyncInvokeOptions, AsyncInvoker } from "./delivery/async-invoke.js";
import {
  BucketNotifications,
  type BucketRouteOptions,
  type NotificationRoute,
} from "./delivery/bucket-notifications.js";
import { currentInvocation } from "./delivery/invocation-scope.js";
import {
  CRASHED_CLAIMS,
  type CrashedClaims,
  LocalFunction,
  type LocalFunctionOptions,
} from "./delivery/local-function.js";
import { LocalOutboxRelay, type LocalOutboxRelayOptions } from "./delivery/outbox-relay.js";
import { S3NotificationFactory } from "./delivery/s3-notifications.js";
import { SqsEventSource, type SqsEventSourceOptions } from "./delivery/sqs-event-source.js";
import { StreamEventSource, type StreamEventSourceOptions } from "./delivery/stream-event-source.js";
import type { StreamReader } from "./delivery/stream-reader.js";
import { type DynamoDBLocal, dynamoDBClient, startDynamoDBLocal } from "./emulators/dynamodb-local.js";
import type { LocalKinesisServer } from "./emulators/kinesis-server.js";
import { type LocalLambdaServer, startLambdaServer } from "./emulators/lambda-server.js";
import type { LocalStreamServer } from "./emulators/local-server.js";
import { type LocalPaymentsServer, startPaymentsServer } from "./emulators/payments-server.js";
import { requireServers } from "./emulators/requirements.js";
import { type LocalS3Server, startS3Server } from "./emulators/s3-server.js";
import { onShutdownSignal } from "./emulators/shutdown.js";
import { type LocalSqsServer, startSqsServer } from "./emulators/sqs-server.js";

/** The options of `LocalRuntime.start`. */
export interface LocalRuntimeOptions {
  /** Seed of every fault decision. Default 1. */
  seed?: number;
  /** Use a running DynamoDB (e.g. the test suite's) instead of starting DynamoDB Local. */
  dynamodbEndpoint?: string;
  /**
   * Which servers to start. Default DynamoDB, S3 and SQS; `lambda`, the local Lambda Invoke endpoint a durable
   * dispatcher starts its executions at (emulators/lambda-server.ts), and `kinesis` (kinesis-local), only when asked
   * for. DynamoDB Streams come with DynamoDB. `payments`, the local payments API with idempotency keys
   * (emulators/payments-server.ts, `PAYMENTS_API_URL` in env()), only when asked for.
   */
  services?: {
    dynamodb?: boolean;
    s3?: boolean;
    sqs?: boolean;
    lambda?: boolean;
    kinesis?: boolean;
    payments?: boolean;
  };
  /** Buckets to create at start. */
  buckets?: string[];
  /** Version ids in notifications (see S3NotificationFactory). Default false. */
  versioned?: boolean;
  /** Stop cleanly on SIGINT/SIGTERM, then exit (130/143). Default false; the CLI turns it on. */
  handleSignals?: boolean;
  /** Ports to listen on (default: ones the OS picks), e.g. to set the handler's environment before start. */
  ports?: {
    dynamodb?: number;
    s3?: number;
    sqs?: number;
    lambda?: number;
    kinesis?: number;
    payments?: number;
  };
  /** Java executable for DynamoDB Local. Default `java` on the PATH. */
  javaPath?: string;
  /**
   * What stop() does to the claims of runs that crashed at their fault point: `keep` (default) leaves them as a crash
   * does, `running` with their lease running out; `release` unwinds the crashed code so the guard releases them.
   */
  crashedClaims?: CrashedClaims;
}

const isObjectOf = (v: unknown, keys: readonly string[], is: (x: unknown) => boolean) =>
  typeof v === "object" &&
  v !== null &&
  Object.entries(v).every(([k, x]) => keys.includes(k) && (x === undefined || is(x)));
const SERVICES = ["dynamodb", "s3", "sqs", "lambda", "kinesis", "payments"] as const;

/** The runtime's options, field by field; `doc` is the help line of the `eonce run` and `eonce demo` flag. */
export const LOCAL_RUNTIME_OPTIONS = schemaFor<LocalRuntimeOptions>()({
  seed: integer({ default: 1, doc: "seed of every injected fault" }),
  dynamodbEndpoint: string({ doc: "use this running DynamoDB Local instead of starting one" }),
  services: custom<NonNullable<LocalRuntimeOptions["services"]>>(
    "an object of booleans (dynamodb, s3, sqs, lambda, kinesis, payments)",
    (v) => isObjectOf(v, SERVICES, (x) => typeof x === "boolean"),
  ),
  buckets: custom<string[]>(
    "a list of bucket names",
    (v) => Array.isArray(v) && v.every((b) => typeof b === "string"),
  ),
  versioned: boolean({ default: false }),
  handleSignals: boolean({ default: false }),
  ports: custom<NonNullable<LocalRuntimeOptions["ports"]>>(
    "an object of ports (dynamodb, s3, sqs, lambda, kinesis, payments)",
    (v) =>
      isObjectOf(v, SERVICES, (x) => Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < 65536),
  ),
  javaPath: string(),
  crashedClaims: oneOf(CRASHED_CLAIMS, {
    default: "keep",
    doc: "when the run ends, leave a crashed run's claim running, as a crash does (keep), or release it",
  }),
});

/** The options of `LocalRuntime.createQueue`. */
export interface QueueOptions {
  fifo?: boolean;
  /** Seconds, as SQS takes it. Default 30. */
  visibilityTimeoutS?: number;
  /** Create `<name>-dlq` and redrive to it after this many receives. */
  maxReceiveCount?: number;
  /** FIFO content-based deduplication. Default false. */
  contentBasedDeduplication?: boolean;
}

/** A queue the runtime created, and its dead-letter queue when it has one. */
export interface LocalQueue {
  name: string;
  url: string;
  arn: string;
  dlq?: { name: string; url: string; arn: string };
}

/** The options of `LocalRuntime.idle`. */
export interface IdleOptions {
  /** Give up (and throw) after this long. Default 120 000. */
  timeoutMs?: number;
}

/**
 * The local AWS: DynamoDB Local, s3rver and fauxqs on 127.0.0.1, S3 notifications routed to local
 * Lambda functions directly, via EventBridge envelopes or via SQS, with seedable faults.
 *
 * Handlers run unchanged: `env()` gives the variables that point the AWS SDK's default endpoints here.
 */
export class LocalRuntime {
  /** What every function, invoker, event source and notification route of this runtime shares. */
  readonly sim: Simulation;
  readonly trace: Trace;
  readonly activity: Activity;
  readonly sleeper: Sleeper;
  readonly prng: Prng;
  readonly dynamodb?: { endpoint: string; server?: DynamoDBLocal };
  readonly s3?: LocalS3Server;
  readonly sqs?: LocalSqsServer;
  /** The local Lambda Invoke endpoint (durable starts), when `services.lambda` asked for it. */
  readonly lambda?: LocalLambdaServer;
  /** The local Kinesis, when `services.kinesis` asked for it. */
  readonly kinesis?: LocalStreamServer;
  /** The same server with its client (the SDK's Kinesis types stay out of the public declarations). */
  readonly #kinesisServer?: LocalKinesisServer;
  /** The local payments API (idempotency keys; faults by `payments.injectFaults`), when `services.payments` asked for it. */
  readonly payments?: LocalPaymentsServer;
  readonly notifications?: BucketNotifications;
  readonly #functions: LocalFunction[] = [];
  readonly #sources: (SqsEventSource | StreamEventSource | LocalOutboxRelay)[] = [];
  readonly #clients: { destroy(): void }[] = [];
  readonly #crashedClaims: CrashedClaims;
  #removeSignalHandlers: (() => void) | undefined;
  #stopped: Promise<void> | undefined;
  #ddbClient?: DynamoDBClient;
  #s3Client?: S3Client;
  #sqsClient?: SQSClient;
  #streamsClient?: DynamoDBStreamsClient;
  #kinesisClient?: { destroy(): void };

  private constructor(
    sim: Simulation,
    parts: {
      dynamodb?: { endpoint: string; server?: DynamoDBLocal };
      s3?: LocalS3Server;
      sqs?: LocalSqsServer;
      lambda?: LocalLambdaServer;
      kinesis?: LocalKinesisServer;
      payments?: LocalPaymentsServer;
      versioned: boolean;
      crashedClaims: CrashedClaims;
    },
  ) {
    this.#crashedClaims = parts.crashedClaims;
    this.sim = sim;
    ({ trace: this.trace, activity: this.activity, sleeper: this.sleeper, prng: this.prng } = sim);
    this.dynamodb = parts.dynamodb;
    this.s3 = parts.s3;
    this.sqs = parts.sqs;
    this.lambda = parts.lambda;
    this.kinesis = parts.kinesis;
    this.#kinesisServer = parts.kinesis;
    this.payments = parts.payments;
    if (parts.s3) {
      this.notifications = new BucketNotifications(
        {
          s3: parts.s3,
          sqs: parts.sqs ? this.sqsClient() : undefined,
          factory: new S3NotificationFactory({ versioned: parts.versioned }),
        },
        sim,
      );
    }
  }

  /**
   * Starts the servers (DynamoDB Local, s3rver, fauxqs: all three by default, side by side; the local Lambda Invoke
   * endpoint when asked for) and the delivery layer.
   */
  static async start(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
    const o = resolveOptions("LocalRuntime", LOCAL_RUNTIME_OPTIONS, options);
    const want = {
      dynamodb: true,
      s3: true,
      sqs: true,
      lambda: false,
      kinesis: false,
      payments: false,
      ...o.services,
    };
    const ports = o.ports ?? {};
    // The three start in parallel: DynamoDB Local (a JVM) dominates the start time. allSettled, not all:
    // a server that finishes starting after another one failed must be stopped too, or it keeps the
    // process alive (a JVM listening for ever).
    const [ddb, s3, sqs, lambda, kinesis, payments] = await startServers(o, want, ports);
    const results = [ddb, s3, sqs, lambda, kinesis, payments];
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      await Promise.allSettled(results.map((r) => (r.status === "fulfilled" ? r.value?.stop() : undefined)));
      throw failed.reason;
    }
    const value = <T>(r: PromiseSettledResult<T>): T | undefined =>
      r.status === "fulfilled" ? r.value : undefined;
    const ddbServer = value(ddb);
    const dynamodb = ddbServer
      ? { endpoint: ddbServer.endpoint, server: ddbServer }
      : want.dynamodb && o.dynamodbEndpoint
        ? { endpoint: o.dynamodbEndpoint }
        : undefined;
    const runtime = new LocalRuntime(createSimulation(o.seed), {
      dynamodb,
      s3: value(s3),
      sqs: value(sqs),
      lambda: value(lambda),
      kinesis: value(kinesis),
      payments: value(payments),
      versioned: o.versioned,
      crashedClaims: o.crashedClaims,
    });
    if (o.handleSignals) runtime.#removeSignalHandlers = onShutdownSignal(() => runtime.stop());
    return runtime;
  }

  /**
   * Checks, in milliseconds and before anything starts, what start() would need: Java on the PATH for
   * DynamoDB Local, and the emulator packages. Throws a one-line Error naming what is missing.
   */
  static preflight(options: LocalRuntimeOptions = {}): void {
    requireServers({ dynamodb: true, s3: true, sqs: true, ...options.services }, options);
  }

  /**
   * The runtime's Kinesis client (HTTP/1.1: see kinesis-server.ts), destroyed when the runtime stops. Its type is the
   * caller's to name (`kinesisClient<KinesisClient>()`): the SDK's Kinesis client is an optional peer, kept out of the
   * package's public types.
   */
  kinesisClient<C = unknown>(): C {
    if (!this.#kinesisServer) throw new Error("Kinesis is not running in this runtime");
    this.#kinesisClient ??= this.#own(this.#kinesisServer.client());
    return this.#kinesisClient as C;
  }

  /** A reader of a Kinesis stream of this runtime's Kinesis, for `streamEventSource`. */
  async kinesisReader(streamName: string): Promise<StreamReader> {
    const { KinesisReader } = await import("./delivery/kinesis-reader.js");
    const client = this.kinesisClient<import("@aws-sdk/client-kinesis").KinesisClient>();
    return new KinesisReader(client, streamName, this.kinesis?.streamArn(streamName) ?? "");
  }

  /**
   * A reader of a table's stream (its `LatestStreamArn`) on this runtime's DynamoDB, for `streamEventSource`:
   * DynamoDB Local serves the Streams API at its own endpoint. The client (an optional peer) is loaded on first use.
   */
  async dynamodbStreamReader(streamArn: string): Promise<StreamReader> {
    if (!this.dynamodb) throw new Error("DynamoDB is not running in this runtime");
    const endpoint = this.dynamodb.endpoint;
    const [{ DynamoDBStreamsClient }, { DynamoDBStreamReader }] = await Promise.all([
      import("@aws-sdk/client-dynamodb-streams"),
      import("./delivery/dynamodb-stream-reader.js"),
    ]);
    this.#streamsClient ??= this.#own(
      new DynamoDBStreamsClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }),
    );
    return new DynamoDBStreamReader(this.#streamsClient, streamArn);
  }

  /** Shared clients for the runtime's own use (setup, measuring); destroyed by stop(). */
  dynamodbClient(): DynamoDBClient {
    if (!this.dynamodb) throw new Error("DynamoDB is not running in this runtime");
    this.#ddbClient ??= this.#own(dynamoDBClient(this.dynamodb.endpoint));
    return this.#ddbClient;
  }

  /** The runtime's S3 client (local endpoint and credentials). */
  s3Client(): S3Client {
    if (!this.s3) throw new Error("S3 is not running in this runtime");
    this.#s3Client ??= this.#own(this.s3.client());
    return this.#s3Client;
  }

  /** The runtime's SQS client (local endpoint and credentials). */
  sqsClient(): SQSClient {
    if (!this.sqs) throw new Error("SQS is not running in this runtime");
    this.#sqsClient ??= frozenRunsExtendNothing(this.#own(this.sqs.client()));
    return this.#sqsClient;
  }

  /**
   * Environment variables that point an unchanged handler's default AWS SDK clients at the local
   * servers: per-service endpoint URLs, the runtime's own key pair and region (aws-local.ts: a DynamoDB Local
   * without `-sharedDb` shows a client only the tables of its key pair and region), checksums only when required
   * (s3rver cannot store aws-chunked bodies), and no IMDS lookups.
   */
  env(): Record<string, string> {
    return LocalRuntime.envFor({
      dynamodb: this.dynamodb?.endpoint,
      s3: this.s3?.endpoint,
      sqs: this.sqs?.endpoint,
      lambda: this.lambda?.endpoint,
      kinesis: this.kinesis?.endpoint,
      payments: this.payments?.endpoint,
    });
  }

  /** env() for servers that are not started yet (their ports chosen up front), e.g. to load a handler first. */
  static envFor(endpoints: {
    dynamodb?: string;
    s3?: string;
    sqs?: string;
    lambda?: string;
    kinesis?: string;
    payments?: string;
  }): Record<string, string> {
    const env: Record<string, string> = {
      AWS_REGION: LOCAL_REGION,
      AWS_DEFAULT_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_REQUEST_CHECKSUM_CALCULATION: "WHEN_REQUIRED",
      AWS_RESPONSE_CHECKSUM_VALIDATION: "WHEN_REQUIRED",
      AWS_EC2_METADATA_DISABLED: "true",
    };
    if (endpoints.dynamodb) {
      env.AWS_ENDPOINT_URL_DYNAMODB = endpoints.dynamodb;
      env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS = endpoints.dynamodb;
    }
    if (endpoints.kinesis) env.AWS_ENDPOINT_URL_KINESIS = endpoints.kinesis;
    if (endpoints.s3) env.AWS_ENDPOINT_URL_S3 = endpoints.s3;
    // Also what the visibility heartbeat addresses queues at (the queue URLs of fauxqs are under it).
    if (endpoints.sqs) env.AWS_ENDPOINT_URL_SQS = endpoints.sqs;
    // A LambdaClient's Invoke (a durable dispatcher's start) goes to the local endpoint, never to AWS.
    if (endpoints.lambda) env.AWS_ENDPOINT_URL_LAMBDA = endpoints.lambda;
    if (endpoints.payments) env.PAYMENTS_API_URL = endpoints.payments;
    return env;
  }

  /** Sets env() on process.env (and drops profile/session settings); returns a function restoring it. */
  setEnv(extra: Record<string, string> = {}): () => void {
    return setEnvironment({ ...this.env(), ...extra });
  }

  /** @deprecated Renamed `setEnv`; removed in the next minor version. */
  applyEnv(extra: Record<string, string> = {}): () => void {
    return this.setEnv(extra);
  }

  /** Creates a bucket; one that exists already is fine. */
  async createBucket(name: string): Promise<void> {
    try {
      await this.s3Client().send(new CreateBucketCommand({ Bucket: name }));
    } catch (error) {
      if (!(error instanceof Error && /BucketAlready/.test(error.name))) throw error;
    }
  }

  /** Creates a queue (and its dead-letter queue when `maxReceiveCount` is set). */
  async createQueue(name: string, options: QueueOptions = {}): Promise<LocalQueue> {
    if (!this.sqs) throw new Error("SQS is not running in this runtime");
    const fifo = options.fifo ?? name.endsWith(".fifo");
    const client = this.sqsClient();
    const base: Record<string, string> = {
      VisibilityTimeout: String(options.visibilityTimeoutS ?? 30),
    };
    if (fifo) {
      base.FifoQueue = "true";
      if (options.contentBasedDeduplication) base.ContentBasedDeduplication = "true";
    }
    let dlq: LocalQueue["dlq"];
    if (options.maxReceiveCount !== undefined) {
      const dlqName = fifo ? `${name.replace(/\.fifo$/, "")}-dlq.fifo` : `${name}-dlq`;
      const out = await client.send(
        new CreateQueueCommand({ QueueName: dlqName, Attributes: fifo ? { FifoQueue: "true" } : {} }),
      );
      dlq = {
        name: dlqName,
        url: out.QueueUrl ?? this.sqs.queueUrl(dlqName),
        arn: this.sqs.queueArn(dlqName),
      };
      base.RedrivePolicy = JSON.stringify({
        deadLetterTargetArn: dlq.arn,
        maxReceiveCount: options.maxReceiveCount,
      });
    }
    const out = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: base }));
    return {
      name,
      url: out.QueueUrl ?? this.sqs.queueUrl(name),
      arn: this.sqs.queueArn(name),
      ...(dlq ? { dlq } : {}),
    };
  }

  /** Messages in a queue, visible or not (e.g. a DLQ after a run). */
  async queueDepth(url: string): Promise<number> {
    const out = await this.sqsClient().send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    const a = out.Attributes ?? {};
    return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
  }

  /**
   * The ids of every message in a queue (e.g. a DLQ after a run). It receives them, so they are hidden
   * for five minutes afterwards: call it when the run is over.
   */
  async drainMessageIds(url: string): Promise<string[]> {
    const ids: string[] = [];
    for (;;) {
      const out = await this.sqsClient().send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300 }),
      );
      const got = out.Messages ?? [];
      if (got.length === 0) return ids;
      for (const m of got) if (m.MessageId) ids.push(m.MessageId);
    }
  }

  /** Asynchronous invocation of `fn` (as S3 and EventBridge use it), for events the caller makes. */
  asyncInvoker(fn: LocalFunction, source: SourceKind, options: AsyncInvokeOptions = {}): AsyncInvoker {
    return new AsyncInvoker(fn, source, options, this.sim);
  }

  /** A Lambda function run by this runtime. */
  fn(options: LocalFunctionOptions): LocalFunction {
    const fn = new LocalFunction(options, this.sim);
    this.#functions.push(fn);
    return fn;
  }

  /** Routes a bucket's object events (see NotificationRoute); returns a function removing the route. */
  notify(bucket: string, route: NotificationRoute, options?: BucketRouteOptions): () => void {
    if (!this.notifications) throw new Error("S3 is not running in this runtime");
    return this.notifications.route(bucket, route, options);
  }

  /** Starts polling `options.queueUrl` for `fn` (an SQS event source mapping). */
  sqsEventSource(fn: LocalFunction, options: SqsEventSourceOptions): SqsEventSource {
    const source = new SqsEventSource(fn, options, this.sqsClient(), this.sim);
    this.#sources.push(source);
    source.start();
    return source;
  }

  /** Starts reading a stream for `fn` (a Kinesis or DynamoDB Streams event source mapping). */
  streamEventSource(
    fn: LocalFunction,
    reader: StreamReader,
    options: StreamEventSourceOptions = {},
  ): StreamEventSource {
    const source = new StreamEventSource(fn, reader, options, this.sim);
    this.#sources.push(source);
    source.start();
    return source;
  }

  /**
   * Starts relaying an outbox (`copies` relays racing, with seeded faults): counted as settled by `idle` only once
   * every committed entry has been sent.
   */
  outboxRelay(options: LocalOutboxRelayOptions, name = "outbox"): LocalOutboxRelay {
    const relay = new LocalOutboxRelay(options, this.sim, name);
    this.#sources.push(relay);
    relay.start();
    return relay;
  }

  /**
   * Resolves when everything started has settled: no delivery waiting, retrying or running, no zombie
   * still running, every polled queue empty. Crashed runs hang until stop() and do not count.
   */
  async idle(options: IdleOptions = {}): Promise<void> {
    const deadline = Date.now() + (options.timeoutMs ?? 120_000);
    let quietChecks = 0;
    let drained: boolean[] = [];
    // Two quiet checks in a row: a settling run may enqueue new work (a retry, a message) on its way out.
    while (quietChecks < 2) {
      if (Date.now() > deadline) {
        const busy = this.#sources.filter((_, i) => !drained[i]).map((s) => s.describe());
        const what = busy.length > 0 ? `; not drained: ${busy.join(", ")}` : "";
        throw new Error(`the local runtime did not go idle (${this.activity.count} pending${what})`);
      }
      await Promise.race([this.activity.idle(), this.sleeper.sleep(200)]);
      drained = await Promise.all(this.#sources.map((s) => s.drained().catch(() => false)));
      quietChecks = this.activity.count === 0 && drained.every(Boolean) ? quietChecks + 1 : 0;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /**
   * Stops polling, cuts pending delays and retries, leaves crashed runs dead or unwinds them (`crashedClaims`), closes
   * clients and servers.
   */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#removeSignalHandlers?.();
      await Promise.allSettled(this.#sources.map((s) => s.stop()));
      this.sleeper.stop();
      for (const fn of this.#functions) fn.stopCrashed(this.#crashedClaims);
      // Let unwinding runs finish their last requests before the servers go (bounded).
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([this.activity.idle(), new Promise((r) => (timer = setTimeout(r, 2000)))]);
      } finally {
        clearTimeout(timer);
      }
      this.notifications?.close();
      for (const c of this.#clients) c.destroy();
      await Promise.allSettled([
        this.s3?.stop(),
        this.sqs?.stop(),
        this.lambda?.stop(),
        this.kinesis?.stop(),
        this.payments?.stop(),
        this.dynamodb?.server?.stop(),
      ]);
    })();
    return this.#stopped;
  }

  #own<T extends { destroy(): void }>(client: T): T {
    this.#clients.push(client);
    return client;
  }
}

/**
 * A timed-out or crashed run keeps its timers in this process (a real Lambda's would be frozen or gone): its SQS
 * visibility heartbeat must extend nothing, as its lease renewals renew nothing (sim/live/instrumented-store.ts), or
 * its messages would stay hidden until the runtime stops.
 */
function frozenRunsExtendNothing(client: SQSClient): SQSClient {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName?.startsWith("ChangeMessageVisibility") && currentInvocation()?.signal.aborted)
        throw new Error("frozen: a timed-out or crashed run extends no visibility timeout");
      return next(args);
    },
    { step: "initialize", name: "eonceFrozenRunsExtendNothing" },
  );
  return client;
}

/** Every wanted server, started side by side; each settles on its own (see start). */
function startServers(
  o: Resolved<typeof LOCAL_RUNTIME_OPTIONS>,
  want: Record<(typeof SERVICES)[number], boolean>,
  ports: NonNullable<LocalRuntimeOptions["ports"]>,
) {
  return Promise.allSettled([
    want.dynamodb && !o.dynamodbEndpoint
      ? startDynamoDBLocal({
          ...(ports.dynamodb ? { port: ports.dynamodb } : {}),
          ...(o.javaPath ? { javaPath: o.javaPath } : {}),
        })
      : undefined,
    want.s3 ? startS3Server({ buckets: o.buckets, ...(ports.s3 ? { port: ports.s3 } : {}) }) : undefined,
    want.sqs ? startSqsServer(ports.sqs ? { port: ports.sqs } : {}) : undefined,
    want.lambda
      ? startLambdaServer({ seed: o.seed, ...(ports.lambda ? { port: ports.lambda } : {}) })
      : undefined,
    // Loaded only when asked for: its SDK client and kinesis-local are optional peers.
    want.kinesis
      ? import("./emulators/kinesis-server.js").then((m) =>
          m.startKinesisServer(ports.kinesis ? { port: ports.kinesis } : {}),
        )
      : undefined,
    want.payments
      ? startPaymentsServer({ seed: o.seed, ...(ports.payments ? { port: ports.payments } : {}) })
      : undefined,
  ]);
}

/** Sets `vars` on process.env (and drops profile/session settings); returns a function restoring it. */
export function setEnvironment(vars: Record<string, string>): () => void {
  const dropped = ["AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"];
  const saved = new Map<string, string | undefined>();
  for (const name of [...Object.keys(vars), ...dropped]) saved.set(name, process.env[name]);
  for (const name of dropped) delete process.env[name];
  Object.assign(process.env, vars);
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}
