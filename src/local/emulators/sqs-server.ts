/**
 * A local SQS API: `fauxqs` 1.9.2 (pinned: 2.x needs Node 22) in this process through its `buildApp`,
 * listening on 127.0.0.1 only (its `startFauxqs` listens on 0.0.0.0).
 *
 * What fauxqs 1.9.2 does with the AWS SDK v3 SQSClient (checked by test/local/servers.test.ts):
 * - Queue URLs: fauxqs builds them as `http://sqs.<region>.localhost:<port>/000000000000/<name>`, and looks
 *   queues up by that exact string. `*.localhost` does not resolve here (ENOTFOUND), and an SQSClient without
 *   an explicit endpoint sends to the QueueUrl's host. So we hand fauxqs an SqsStore whose URLs are
 *   `http://127.0.0.1:<port>/000000000000/<name>` (= {@link LocalSqsServer.queueUrl}). One region only:
 *   same-named queues of two regions would get the same URL.
 * - Visibility timeouts are applied lazily (on the next receive), expired messages of a standard queue go to
 *   the back. ApproximateReceiveCount counts every receive (1, 2, ...).
 * - Redrive is lazy too: the receive that would exceed maxReceiveCount moves the message to the DLQ and
 *   returns nothing; that receive is counted, so the first receive from the DLQ reports maxReceiveCount + 2.
 * - DeleteMessage with a stale receipt handle succeeds without deleting (as in AWS); ChangeMessageVisibility
 *   of a message not in flight fails with MessageNotInflight.
 * - FIFO: per-group order, a group is locked while one of its messages is in flight, and a receive returns at
 *   most ONE message per group (AWS may return several of a group). Dedup ids hold for 5 minutes and
 *   a duplicate send answers the original MessageId.
 */
import type { AddressInfo } from "node:net";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { BuildAppOptions, buildApp } from "fauxqs";
import { LOCAL_ACCOUNT_ID, LOCAL_CREDENTIALS, LOCAL_REGION } from "../aws-local.js";
import type { LocalServer } from "./local-server.js";

export interface LocalSqsServer extends LocalServer {
  /** A client for this server with dummy credentials. */
  client(): SQSClient;
  /** The URL CreateQueue answers for `name`, whether or not the queue exists yet. */
  queueUrl(name: string): string;
  /** The queue's ARN, e.g. for a RedrivePolicy's deadLetterTargetArn. */
  queueArn(name: string): string;
}

export interface StartSqsServerOptions {
  /** Default: a port the OS picks. */
  port?: number;
}

type FauxqsStores = NonNullable<BuildAppOptions["stores"]>;
type SqsStore = FauxqsStores["sqsStore"];

export function sqsClient(endpoint: string): SQSClient {
  return new SQSClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 3 });
}

/** buildApp as it behaves: it makes each missing store itself (`stores?.snsStore ?? new SnsStore()`). */
type BuildApp = (
  options: Omit<BuildAppOptions, "stores"> & { stores?: Partial<FauxqsStores> },
) => ReturnType<typeof buildApp>;

async function loadFauxqs(): Promise<{ buildApp: BuildApp; SqsStore: new () => SqsStore }> {
  let fauxqs: typeof import("fauxqs");
  try {
    fauxqs = await import("fauxqs");
  } catch (cause) {
    throw new Error("the local SQS server needs the npm package fauxqs 1.9.2 (npm i -D fauxqs@1.9.2)", {
      cause,
    });
  }
  // fauxqs exports no SqsStore class; it sits next to the entry point (dist/app.js) in 1.9.2.
  const storeUrl = new URL("./sqs/sqsStore.js", import.meta.resolve("fauxqs")).href;
  const { SqsStore } = (await import(storeUrl)) as { SqsStore?: unknown };
  if (typeof SqsStore !== "function" || typeof SqsStore.prototype?.buildQueueUrl !== "function") {
    throw new Error(`fauxqs has no SqsStore with buildQueueUrl at ${storeUrl}: use fauxqs 1.9.2`);
  }
  return { buildApp: fauxqs.buildApp as BuildApp, SqsStore: SqsStore as new () => SqsStore };
}

export async function startSqsServer(options: StartSqsServerOptions = {}): Promise<LocalSqsServer> {
  const fauxqs = await loadFauxqs();
  let endpoint = "";
  const queueUrl = (name: string) => `${endpoint}/${LOCAL_ACCOUNT_ID}/${name}`;
  class LocalSqsStore extends fauxqs.SqsStore {
    override buildQueueUrl(queueName: string): string {
      return queueUrl(queueName);
    }
  }
  const app = fauxqs.buildApp({
    logger: false,
    defaultRegion: LOCAL_REGION,
    stores: { sqsStore: new LocalSqsStore() },
  });
  let bound: AddressInfo;
  try {
    await app.listen({ port: options.port ?? 0, host: "127.0.0.1" });
    bound = app.server.address() as AddressInfo;
  } catch (error) {
    await app.close();
    throw error;
  }
  // Set in the same tick as listen resolves, before any request is handled.
  endpoint = `http://127.0.0.1:${bound.port}`;
  let stopped: Promise<void> | undefined;

  return {
    endpoint,
    port: bound.port,
    address: bound.address,
    client: () => sqsClient(endpoint),
    queueUrl,
    queueArn: (name) => `arn:aws:sqs:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${name}`,
    stop() {
      // buildApp sets forceCloseConnections, so idle keep-alive sockets do not hold this open.
      stopped ??= app.close().then(() => undefined);
      return stopped;
    },
  };
}
