import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import type { StateStore } from "../../src/core/store.js";
import {
  DynamoDBStepEffects,
  durableExecutionName,
  durableS3Dispatcher,
  durableSqsDispatcher,
} from "../../src/durable/index.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { lambdaContext } from "../kit/context.js";
import { s3Notification, s3Record, sqsEvent, sqsRecord } from "../kit/events.js";
import { FakeDurableLambda } from "./fake-lambda.js";
import { errorCollectingLogger, orderOptions, quietLogger, runHistory, violations } from "./harness.js";

/** A store that counts the guard's requests to it. */
function counted(store: StateStore) {
  const calls: Record<string, number> = {};
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function" || typeof name !== "string") return value;
      return (...args: unknown[]) => {
        if (["claim", "renew", "commit", "release", "claimAndCommit", "read"].includes(name))
          calls[name] = (calls[name] ?? 0) + 1;
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

const upload = (sequencer: string, etag = "e1") =>
  s3Notification(s3Record({ key: "photos/cat.jpg", sequencer, eTag: etag }));

describe("durable dispatcher", () => {
  it("starts one execution per event: one claim, one Invoke, one commit; a duplicate replays the commit", async () => {
    const { store, calls } = counted(new MemoryStore());
    const lambda = new FakeDurableLambda();
    const handler = durableS3Dispatcher({
      store,
      lambda,
      functionName: "images:live",
      logger: quietLogger(),
    });
    const first = await handler(upload("0A"), lambdaContext());
    expect(calls).toEqual({ claim: 1, commit: 1 });
    expect(lambda.invokes).toBe(1);
    expect(lambda.started).toHaveLength(1);
    const started = lambda.started[0];
    const result = first.deliveries[0]?.events[0];
    expect(result?.status).toBe("processed");
    expect(result?.result).toEqual({ executionName: started?.name, executionArn: started?.arn });
    expect(started?.name).toBe(
      durableExecutionName("amzn-s3-demo-bucket/photos/cat.jpg", `${"0A".padEnd(32, "0")}:created`),
    );

    const again = await handler(upload("0A"), lambdaContext());
    expect(again.deliveries[0]?.events[0]).toMatchObject({ status: "duplicate", result: result?.result });
    expect(lambda.invokes).toBe(1);
    expect(calls).toEqual({ claim: 2, commit: 1 });
  });

  it("counts Lambda's existing execution (same name, same payload) as done when the guard forgot the event", async () => {
    const lambda = new FakeDurableLambda();
    const options = { lambda, functionName: "images:live", logger: quietLogger() };
    await durableS3Dispatcher({ ...options, store: new MemoryStore() })(upload("0A"), lambdaContext());
    const report = await durableS3Dispatcher({ ...options, store: new MemoryStore() })(
      upload("0A"),
      lambdaContext(),
    );
    expect(report.deliveries[0]?.events[0]?.status).toBe("processed");
    expect(lambda.invokes).toBe(2);
    expect(lambda.started).toHaveLength(1);
  });

  it("routes Lambda's name conflict (another payload) as a typed failure: released, retried, then dead-lettered", async () => {
    const lambda = new FakeDurableLambda();
    const lines: unknown[] = [];
    const options = { lambda, functionName: "images:live", logger: errorCollectingLogger(lines) };
    await durableSqsDispatcher({ ...options, store: new MemoryStore() })(
      sqsEvent(sqsRecord(upload("0B", "e1"))),
      lambdaContext(),
    );
    // The same event identity with other content, after the guard forgot the first (a new state table).
    const handler = durableSqsDispatcher({ ...options, store: new MemoryStore() });
    const message = sqsRecord(upload("0B", "e2"));
    const answer = await handler(sqsEvent(message), lambdaContext());
    expect(lambda.conflicts).toEqual([lambda.started[0]?.name]);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
    expect(JSON.stringify(lines)).toContain("DurableExecutionConflictError");
    // Released: the redelivery claims again (and meets the same conflict), never a stuck claim.
    const again = await handler(sqsEvent(message), lambdaContext());
    expect(again.batchItemFailures).toHaveLength(1);
    expect(lambda.conflicts).toHaveLength(2);
    expect(lambda.started).toHaveLength(1);
  });

  it("ends `conflict` without an Invoke while the guard remembers the event's other payload", async () => {
    const lambda = new FakeDurableLambda();
    const handler = durableS3Dispatcher({
      store: new MemoryStore(),
      lambda,
      functionName: "f:1",
      logger: quietLogger(),
    });
    await handler(upload("0D", "e1"), lambdaContext());
    await expect(handler(upload("0D", "e2"), lambdaContext())).rejects.toMatchObject({
      failures: [{ status: "conflict" }],
    });
    expect(lambda.invokes).toBe(1);
  });

  it("drops an older event once a newer one of the subject started: no Invoke", async () => {
    const lambda = new FakeDurableLambda();
    const handler = durableS3Dispatcher({
      store: new MemoryStore(),
      lambda,
      functionName: "f:1",
      logger: quietLogger(),
    });
    await handler(upload("0C"), lambdaContext());
    const old = await handler(upload("0B"), lambdaContext());
    expect(old.deliveries[0]?.events[0]?.status).toBe("stale");
    expect(lambda.invokes).toBe(1);
  });

  it("validates its options eagerly", () => {
    const lambda = new FakeDurableLambda();
    const store = new MemoryStore();
    expect(() => durableS3Dispatcher({ store, lambda } as never)).toThrow(/functionName is required/);
    expect(() => durableS3Dispatcher({ store, lambda, functionName: "f", leaseMS: 1 } as never)).toThrow(
      OptionsError,
    );
    expect(() => durableS3Dispatcher({ store, lambda, functionName: "f", mode: "apply" } as never)).toThrow(
      /mode/,
    );
    expect(() => durableS3Dispatcher({ store, lambda: {} as never, functionName: "f" })).toThrow(
      /LambdaClient/,
    );
    const stepEffects = new DynamoDBStepEffects({
      client: { send: async () => ({}) } as never,
      tableName: "t",
    });
    expect(() => durableS3Dispatcher({ store, lambda, functionName: "f", stepEffects })).toThrow(
      /cannot fold/,
    );
  });
});

describe("durable dispatcher under duplicates, reordering and lost responses", () => {
  const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];

  for (const seed of SEEDS) {
    it(`seed ${seed}: each event starts at most once, the newest version of each order last`, async () => {
      const h = await runHistory(seed, (lambda) => orderOptions(new MemoryStore(), lambda));
      expect(violations(h)).toEqual([]);
      expect(h.deliveries).toBeGreaterThan(h.orders.length);
    });
  }

  it("finds the violations of a dispatcher that does not order (the check can fail)", async () => {
    let found = 0;
    for (const seed of SEEDS) {
      const h = await runHistory(seed, (lambda) => orderOptions(new MemoryStore(), lambda, false));
      found += violations(h).length;
    }
    expect(found).toBeGreaterThan(0);
  });
});
