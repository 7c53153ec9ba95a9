import type { ChangeMessageVisibilityBatchCommandOutput } from "@aws-sdk/client-sqs";
import { describeValue } from "../core/describe-value.js";
import { OptionsError } from "../core/errors.js";
import {
  type HeartbeatMessage,
  type HeartbeatProblem,
  type HeartbeatRun,
  type ResolvedVisibilityHeartbeatOptions,
  resolveVisibilityHeartbeatOptions,
  type SqsSender,
  type VisibilityHeartbeatDeps,
  type VisibilityHeartbeatOptions,
} from "./visibility-heartbeat-options.js";

// The options and types, in a file of their own so that a wrapper without SQS batches (s3Handler) validates the
// option without bundling the heartbeat.
export * from "./visibility-heartbeat-options.js";

const BATCH = 10;

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
