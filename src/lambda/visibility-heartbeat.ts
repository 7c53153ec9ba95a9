import type { ChangeMessageVisibilityBatchCommandOutput, SQSClient } from "@aws-sdk/client-sqs";
import { describeValue } from "../core/describe-value.js";
import { OptionsError } from "../core/errors.js";
import { func, integer, optionsRule, required, resolveOptions, schemaFor } from "../core/options.js";

/**
 * Keeps the SQS messages of a batch invisible while they are processed, so that a handler that outlives
 * the queue's visibility timeout is not handed to a second consumer meanwhile (the duplicate the guard
 * would otherwise have to catch). Every `intervalSeconds` it sets the visibility of every message still in
 * progress to `visibilityTimeoutSeconds` from now, with ChangeMessageVisibilityBatch (up to 10 receipt
 * handles per request, per queue). The first extension comes after one interval, so short handlers cost
 * no request. A message whose extension is refused (receipt handle no longer valid, 12-hour limit) is
 * dropped from the heartbeat and reported; a failed request is reported and retried on the next tick.
 */
export interface VisibilityHeartbeatOptions {
  /** Each extension hides the message this long from now. At most 43 200 (12 hours, SQS's limit). */
  visibilityTimeoutSeconds: number;
  /** Time between extensions; must be below visibilityTimeoutSeconds (and below the queue's timeout). */
  intervalSeconds: number;
  /**
   * Queue URL of an event source ARN. Default: under the SQS endpoint the SDK is configured with
   * (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`, or the client's own `endpoint`), as local servers name
   * queues (`<endpoint>/<account>/<name>`); without one, the AWS URL ({@link queueUrlFromArn}).
   */
  queueUrl?: (eventSourceArn: string) => string;
}

/** The heartbeat's options with their defaults filled in. */
export type ResolvedVisibilityHeartbeatOptions = Omit<Required<VisibilityHeartbeatOptions>, "queueUrl"> &
  Pick<VisibilityHeartbeatOptions, "queueUrl">;

/** A message whose visibility the heartbeat extends. */
export interface HeartbeatMessage {
  messageId: string;
  receiptHandle: string;
  eventSourceArn: string;
  /** Passed back in reports, to log with the delivery's correlation id. */
  correlationId?: string;
}

/** An extension that failed, for logs. */
export interface HeartbeatProblem {
  message?: HeartbeatMessage;
  /** `refused`: SQS refused this message's extension (dropped); `request`: the whole request failed (retried). */
  kind: "refused" | "request";
  code?: string;
  error?: unknown;
}

/** The part of an SQS client the heartbeat uses. */
export type SqsSender = Pick<SQSClient, "send">;

/** What the heartbeat needs besides its options. */
export interface VisibilityHeartbeatDeps {
  /** The client, or a factory (called on the first extension, so quick batches never load the SQS SDK). */
  client: SqsSender | (() => SqsSender | Promise<SqsSender>);
  /** Called for each failed extension (its errors are ignored). */
  onProblem?: (problem: HeartbeatProblem) => void;
}

const MAX_VISIBILITY_SECONDS = 43_200;
const BATCH = 10;

const VISIBILITY_HEARTBEAT_OPTIONS = schemaFor<VisibilityHeartbeatOptions>()({
  visibilityTimeoutSeconds: required(integer({ min: 1, max: MAX_VISIBILITY_SECONDS })),
  intervalSeconds: required(integer({ min: 1 })),
  queueUrl: func<(eventSourceArn: string) => string>({ expected: "a function (eventSourceArn) => url" }),
});

/** The option names of `visibilityHeartbeat`. */
export const VISIBILITY_HEARTBEAT_KEYS = Object.keys(
  VISIBILITY_HEARTBEAT_OPTIONS,
) as readonly (keyof VisibilityHeartbeatOptions)[];

/** Checks the heartbeat's options and fills in the defaults; `what` names the caller in `OptionsError`. */
export function resolveVisibilityHeartbeatOptions(
  what: string,
  options: VisibilityHeartbeatOptions,
): ResolvedVisibilityHeartbeatOptions {
  const o = resolveOptions(`${what}: visibilityHeartbeat`, VISIBILITY_HEARTBEAT_OPTIONS, options);
  optionsRule(
    what,
    o.intervalSeconds < o.visibilityTimeoutSeconds,
    `visibilityHeartbeat.intervalSeconds (${o.intervalSeconds}) must be below visibilityTimeoutSeconds ` +
      `(${o.visibilityTimeoutSeconds}), or the message reappears between two extensions`,
  );
  return {
    visibilityTimeoutSeconds: o.visibilityTimeoutSeconds,
    intervalSeconds: o.intervalSeconds,
    ...(o.queueUrl ? { queueUrl: o.queueUrl } : {}),
  };
}

const PARTITION_DOMAINS: Record<string, string> = {
  aws: "amazonaws.com",
  "aws-cn": "amazonaws.com.cn",
  "aws-us-gov": "amazonaws.com",
};

/** `arn:aws:sqs:eu-west-1:123456789012:orders.fifo` → `https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo`. */
export function queueUrlFromArn(arn: string): string {
  const m = /^arn:([a-z-]+):sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/.exec(arn);
  // Own keys only: the ARN comes from the record, and `arn:constructor:sqs:…` must not find Object.
  const domain =
    m && Object.hasOwn(PARTITION_DOMAINS, m[1] as string) ? PARTITION_DOMAINS[m[1] as string] : undefined;
  if (!m || !domain) {
    throw new OptionsError(
      `cannot derive a queue URL from ${describeValue(arn)}: expected arn:aws:sqs:<region>:<account>:<queue> ` +
        "(pass visibilityHeartbeat.queueUrl for other partitions and local endpoints)",
    );
  }
  return `https://sqs.${m[2]}.${domain}/${m[3]}/${m[4]}`;
}

/**
 * `arn:aws:sqs:us-east-1:000000000000:orders` under `http://127.0.0.1:9324` →
 * `http://127.0.0.1:9324/000000000000/orders`: how LocalStack, ElasticMQ and fauxqs name queues.
 */
export function queueUrlAtEndpoint(arn: string, endpoint: string): string {
  const m = /^arn:[a-z-]+:sqs:[a-z0-9-]*:([0-9]+):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/.exec(arn);
  if (!m) {
    throw new OptionsError(
      `cannot derive a queue URL from ${JSON.stringify(arn)}: expected arn:<partition>:sqs:<region>:<account>:<queue>`,
    );
  }
  return `${endpoint.replace(/\/+$/, "")}/${m[1]}/${m[2]}`;
}

/** The endpoint the SDK sends SQS requests to when one is configured (environment, then the client's). */
async function configuredEndpoint(client: SqsSender): Promise<string | undefined> {
  const env = process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL;
  if (env) return env;
  const config = (client as { config?: { isCustomEndpoint?: boolean; endpoint?: unknown } }).config;
  if (!config?.isCustomEndpoint || typeof config.endpoint !== "function") return undefined;
  const e = (await config.endpoint()) as {
    protocol?: string;
    hostname?: string;
    port?: number;
    path?: string;
  };
  if (!e?.hostname) return undefined;
  return `${e.protocol ?? "https:"}//${e.hostname}${e.port ? `:${e.port}` : ""}${e.path ?? ""}`;
}

/** One batch's heartbeat, from `VisibilityHeartbeat.start`. */
export interface HeartbeatRun {
  /** The message is finished (acknowledged or failed): stop extending it. */
  done(messageId: string): void;
  /** Stops the timer and aborts a request in flight. Always call it (in `finally`). */
  stop(): Promise<void>;
  /** Extensions SQS accepted so far (for tests and logs). */
  readonly extended: number;
}

/**
 * Extends the visibility timeout of a batch's messages while they are processed, so SQS does not redeliver
 * them to another run meanwhile.
 */
export class VisibilityHeartbeat {
  readonly options: Readonly<ResolvedVisibilityHeartbeatOptions>;
  readonly #deps: VisibilityHeartbeatDeps;
  #client: Promise<SqsSender> | undefined;

  constructor(options: VisibilityHeartbeatOptions, deps: VisibilityHeartbeatDeps) {
    this.options = resolveVisibilityHeartbeatOptions("VisibilityHeartbeat", options);
    if (!deps || (typeof deps.client !== "function" && typeof deps.client?.send !== "function")) {
      throw new OptionsError("VisibilityHeartbeat: a client (or a client factory) is required");
    }
    this.#deps = deps;
  }

  /** Starts extending `messages`; `onProblem` (default: the one given at construction) hears about failures. */
  start(messages: readonly HeartbeatMessage[], onProblem = this.#deps.onProblem): HeartbeatRun {
    const report = safeReporter(onProblem);
    const active = new Map<string, HeartbeatMessage>();
    for (const m of messages) active.set(m.messageId, m);
    const controller = new AbortController();
    let ticking: Promise<void> | undefined;
    let extended = 0;
    const tick = async () => {
      const client = await this.#getClient();
      // Resolved at the first extension, so quick batches never look at the client or its endpoint.
      const urlOf = this.options.queueUrl ?? (await this.#defaultQueueUrl(client));
      const { ChangeMessageVisibilityBatchCommand } = await import("@aws-sdk/client-sqs");
      for (const [queueUrl, list] of groupByQueue(active, urlOf, report)) {
        for (let i = 0; i < list.length; i += BATCH) {
          if (controller.signal.aborted) return;
          const chunk = list.slice(i, i + BATCH);
          const send = () =>
            client.send(
              new ChangeMessageVisibilityBatchCommand({
                QueueUrl: queueUrl,
                Entries: chunk.map((m, j) => ({
                  Id: `m${j}`,
                  ReceiptHandle: m.receiptHandle,
                  VisibilityTimeout: this.options.visibilityTimeoutSeconds,
                })),
              }),
              { abortSignal: controller.signal },
            );
          extended += await extendChunk(send, chunk, active, controller.signal, report);
        }
      }
    };
    const timer = setInterval(() => {
      // Never overlap: a slow tick skips the next one rather than queueing requests.
      if (ticking || active.size === 0) return;
      ticking = tick()
        .catch((error) => report({ kind: "request", error, code: codeOf(error) }))
        .finally(() => {
          ticking = undefined;
        });
    }, this.options.intervalSeconds * 1000);
    return {
      done: (messageId) => {
        active.delete(messageId);
      },
      stop: async () => {
        clearInterval(timer);
        active.clear();
        controller.abort();
        await ticking;
      },
      get extended() {
        return extended;
      },
    };
  }

  async #defaultQueueUrl(client: SqsSender): Promise<(arn: string) => string> {
    const endpoint = await configuredEndpoint(client).catch(() => undefined);
    return endpoint ? (arn) => queueUrlAtEndpoint(arn, endpoint) : queueUrlFromArn;
  }

  #getClient(): Promise<SqsSender> {
    const c = this.#deps.client;
    this.#client ??= Promise.resolve(typeof c === "function" ? c() : c).catch((error: unknown) => {
      this.#client = undefined; // try the factory again on the next tick
      throw error;
    });
    return this.#client;
  }
}

function safeReporter(onProblem: ((problem: HeartbeatProblem) => void) | undefined) {
  return (problem: HeartbeatProblem) => {
    try {
      onProblem?.(problem);
    } catch {
      // A logging failure must not break the timer.
    }
  };
}

/** The active messages by queue URL; a message whose ARN maps to no URL is reported once and dropped. */
function groupByQueue(
  active: Map<string, HeartbeatMessage>,
  urlOf: (arn: string) => string,
  report: (problem: HeartbeatProblem) => void,
): Map<string, HeartbeatMessage[]> {
  const byQueue = new Map<string, HeartbeatMessage[]>();
  for (const m of [...active.values()]) {
    let url: string;
    try {
      url = urlOf(m.eventSourceArn);
    } catch (error) {
      // Not extended: the guard still prevents double effects.
      active.delete(m.messageId);
      report({ kind: "refused", message: m, code: "QueueUrl", error });
      continue;
    }
    byQueue.set(url, [...(byQueue.get(url) ?? []), m]);
  }
  return byQueue;
}

/**
 * One ChangeMessageVisibilityBatch: returns how many extensions SQS accepted. A refused message is dropped from
 * the heartbeat and reported; a failed request is reported and retried on the next tick.
 */
async function extendChunk(
  send: () => Promise<ChangeMessageVisibilityBatchCommandOutput>,
  chunk: HeartbeatMessage[],
  active: Map<string, HeartbeatMessage>,
  signal: AbortSignal,
  report: (problem: HeartbeatProblem) => void,
): Promise<number> {
  let out: ChangeMessageVisibilityBatchCommandOutput;
  try {
    out = await send();
  } catch (error) {
    if (!signal.aborted) report({ kind: "request", error, code: codeOf(error) });
    return 0;
  }
  for (const failure of out.Failed ?? []) {
    const m = chunk[Number(failure.Id?.slice(1))];
    if (!m) continue;
    active.delete(m.messageId);
    report({ kind: "refused", message: m, code: failure.Code, error: failure.Message });
  }
  return out.Successful?.length ?? 0;
}

function codeOf(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}
