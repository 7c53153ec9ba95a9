import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { S3EventRecord } from "aws-lambda";
import { FaultInjector, type FaultOptions } from "../../sim/live/faults.js";
import type { Simulation } from "../../sim/live/simulation.js";
import type { LocalS3Server, S3rverEventRecord } from "../emulators/s3-server.js";
import { type AsyncInvokeOptions, AsyncInvoker } from "./async-invoke.js";
import { toEventBridgeEvent } from "./eventbridge-envelope.js";
import type { LocalFunction } from "./local-function.js";
import type { S3NotificationFactory } from "./s3-notifications.js";

/** Which object events a route gets (like a notification configuration's Events and Filter). */
export interface NotificationFilter {
  /** Default both. */
  events?: ("created" | "removed")[];
  prefix?: string;
  suffix?: string;
}

/** Where a bucket's notifications go: the three ways S3 reaches a Lambda function. */
export type NotificationRoute =
  /** S3 → Lambda (asynchronous invoke, one record per event). */
  | { via: "direct"; function: LocalFunction; asyncInvoke?: Omit<AsyncInvokeOptions, "faults"> }
  /** S3 → EventBridge → Lambda (asynchronous invoke of the EventBridge envelope). */
  | { via: "eventbridge"; function: LocalFunction; asyncInvoke?: Omit<AsyncInvokeOptions, "faults"> }
  /** S3 → SQS (the notification as the message body); an SqsEventSource takes it from there. */
  | { via: "sqs"; queueUrl: string };

/** Options of one bucket's notification route. */
export interface BucketRouteOptions {
  filter?: NotificationFilter;
  /** Delivery faults between S3 and the target: duplicateRate, reorderWindowMs. */
  faults?: FaultOptions;
}

/** What the notifications come from and go through. */
export interface NotificationServers {
  s3: LocalS3Server;
  /** For S3 → SQS routes. */
  sqs?: SQSClient;
  factory: S3NotificationFactory;
}

/**
 * S3 event notifications for the local S3 server: every object event becomes one faithful record
 * (see S3NotificationFactory), delivered to each matching route. Records are made synchronously in
 * s3rver's request handler, so sequencers follow the order S3 accepted the changes.
 */
export class BucketNotifications {
  readonly #servers: NotificationServers;
  readonly #sim: Simulation;
  readonly #routes = new Map<string, ((record: S3EventRecord) => void)[]>();
  readonly #unsubscribe: () => void;

  constructor(servers: NotificationServers, sim: Simulation) {
    this.#servers = servers;
    this.#sim = sim;
    this.#unsubscribe = servers.s3.onObjectEvent((raw) => this.#onEvent(raw));
  }

  /** Routes `bucket`'s notifications; returns a function removing the route. */
  route(bucket: string, route: NotificationRoute, options: BucketRouteOptions = {}): () => void {
    const filter = options.filter ?? {};
    const label = route.via === "sqs" ? route.queueUrl : route.function.name;
    const faults = new FaultInjector(
      options.faults,
      this.#sim.prng.fork(`s3:${bucket}:${route.via}:${label}`),
    );
    let deliver: (record: S3EventRecord) => void;
    if (route.via === "sqs") {
      const sqs = this.#servers.sqs;
      if (!sqs) throw new Error("S3 → SQS routing needs the SQS server (LocalRuntime services.sqs)");
      deliver = (record) => {
        const body = JSON.stringify({ Records: [record] });
        for (const delayMs of faults.forDelivery().delaysMs) {
          void this.#sim.activity.track(
            this.#sim.sleeper
              .sleep(delayMs)
              .then(() => sqs.send(new SendMessageCommand({ QueueUrl: route.queueUrl, MessageBody: body })))
              .then(() => undefined),
          );
        }
      };
    } else {
      // Delivery faults live in the invoker, so duplicates get their own invocations and retries.
      const invoker = new AsyncInvoker(
        route.function,
        route.via,
        { ...route.asyncInvoke, faults: options.faults },
        this.#sim,
      );
      deliver = (record) => {
        const requestId = record.responseElements["x-amz-request-id"];
        if (route.via === "direct") invoker.deliver({ Records: [record] }, [requestId]);
        else invoker.deliver(toEventBridgeEvent(record), [requestId]);
      };
    }
    const handler = (record: S3EventRecord) => {
      if (matches(record, filter)) deliver(record);
    };
    const list = this.#routes.get(bucket) ?? [];
    list.push(handler);
    this.#routes.set(bucket, list);
    return () => {
      const l = this.#routes.get(bucket) ?? [];
      this.#routes.set(
        bucket,
        l.filter((h) => h !== handler),
      );
    };
  }

  /** Stops routing: no more notifications are delivered. */
  close(): void {
    this.#unsubscribe();
    this.#routes.clear();
  }

  #onEvent(raw: S3rverEventRecord): void {
    const routes = this.#routes.get(raw.s3.bucket.name);
    if (!routes || routes.length === 0) return;
    const record = this.#servers.factory.fromS3rver(raw);
    this.#sim.trace.emit({ type: "s3-event", atMs: this.#sim.now(), record });
    for (const r of routes) r(record);
  }
}

function matches(record: S3EventRecord, filter: NotificationFilter): boolean {
  const kind = record.eventName.startsWith("ObjectCreated") ? "created" : "removed";
  if (filter.events && !filter.events.includes(kind)) return false;
  // Filters apply to the decoded key, as S3's prefix/suffix rules do.
  const key = decodeURIComponent(record.s3.object.key.replace(/\+/g, " "));
  if (filter.prefix && !key.startsWith(filter.prefix)) return false;
  if (filter.suffix && !key.endsWith(filter.suffix)) return false;
  return true;
}
