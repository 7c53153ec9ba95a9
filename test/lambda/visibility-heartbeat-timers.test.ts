import type {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityBatchCommandOutput,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type HeartbeatProblem,
  type SqsSender,
  VisibilityHeartbeat,
} from "../../src/lambda/visibility-heartbeat.js";

/**
 * The heartbeat's timing on fake timers: when it ticks, that a slow request never piles up, and that stop() clears
 * its timer and aborts what is in flight without waiting. Network failures and hung requests are error paths a
 * server cannot produce on demand, so the client is a stub here; test/lambda/visibility-heartbeat.test.ts checks
 * the visibility itself on a real SQS server.
 */
const ARN = "arn:aws:sqs:us-east-1:123456789012:q";
const QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/q";
const message = (id: string) => ({ messageId: id, receiptHandle: `rh-${id}`, eventSourceArn: ARN });

/** A client that answers every extension at once, recording the receipt handles of each request. */
function accepting(): SqsSender & { requests: string[][] } {
  const requests: string[][] = [];
  return {
    requests,
    send: ((command: ChangeMessageVisibilityBatchCommand) => {
      const entries = command.input.Entries ?? [];
      requests.push(entries.map((e) => e.ReceiptHandle ?? ""));
      const out: ChangeMessageVisibilityBatchCommandOutput = {
        Successful: entries.map((e) => ({ Id: e.Id })),
        Failed: [],
        $metadata: {},
      };
      return Promise.resolve(out);
    }) as SQSClient["send"],
  };
}

// The heartbeat loads the SQS client module at its first tick; loaded here first, that import does not wait on
// real I/O while the clock is frozen.
beforeAll(async () => {
  await import("@aws-sdk/client-sqs");
});
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("VisibilityHeartbeat on fake timers", () => {
  it("extends every intervalSeconds, only the messages not done, and stops ticking when none is left", async () => {
    const client = accepting();
    const heartbeat = new VisibilityHeartbeat(
      { visibilityTimeoutSeconds: 30, intervalSeconds: 10, queueUrl: () => QUEUE_URL },
      { client },
    );
    const run = heartbeat.start([message("a"), message("b")]);
    try {
      await vi.advanceTimersByTimeAsync(9_999);
      expect(client.requests).toEqual([]); // nothing before the first interval
      await vi.advanceTimersByTimeAsync(1);
      expect(client.requests).toEqual([["rh-a", "rh-b"]]);
      run.done("a");
      await vi.advanceTimersByTimeAsync(10_000);
      expect(client.requests).toEqual([["rh-a", "rh-b"], ["rh-b"]]);
      run.done("b");
      await vi.advanceTimersByTimeAsync(60_000);
      expect(client.requests).toHaveLength(2);
      expect(run.extended).toBe(3);
    } finally {
      await run.stop();
    }
    // The interval is cleared: nothing is left to fire.
    expect(vi.getTimerCount()).toBe(0);
  });

  it("reports a failed request, retries on the next interval, and aborts an in-flight request on stop", async () => {
    const problems: HeartbeatProblem[] = [];
    let calls = 0;
    let aborted = false;
    const client: SqsSender = {
      send: ((_command: unknown, options?: { abortSignal?: AbortSignal }) => {
        calls++;
        if (calls === 1)
          return Promise.reject(Object.assign(new Error("socket hang up"), { name: "TimeoutError" }));
        // The second request hangs until stop() aborts it.
        return new Promise((_resolve, reject) => {
          options?.abortSignal?.addEventListener("abort", () => {
            aborted = true;
            reject(new Error("aborted"));
          });
        });
      }) as SQSClient["send"],
    };
    const heartbeat = new VisibilityHeartbeat(
      { visibilityTimeoutSeconds: 5, intervalSeconds: 1, queueUrl: () => QUEUE_URL },
      { client, onProblem: (p) => problems.push(p) },
    );
    const run = heartbeat.start([message("m1")]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toBe(1);
    expect(problems).toEqual([expect.objectContaining({ kind: "request", code: "TimeoutError" })]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toBe(2); // retried on the next interval
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls).toBe(2); // the hung request blocks later ticks instead of piling up requests
    // stop() resolves with the clock frozen: it waits for no timer, it aborts the request.
    await run.stop();
    expect(aborted).toBe(true);
    expect(problems).toHaveLength(1); // an abort on stop is not a problem
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toBe(2);
  });

  it("a tick that throws before sending (no client from the factory) is reported, and the next tick tries again", async () => {
    const problems: HeartbeatProblem[] = [];
    const working = accepting();
    let factoryCalls = 0;
    const heartbeat = new VisibilityHeartbeat(
      { visibilityTimeoutSeconds: 5, intervalSeconds: 1, queueUrl: () => QUEUE_URL },
      {
        client: () => {
          factoryCalls++;
          if (factoryCalls === 1)
            throw Object.assign(new Error("no credentials"), { name: "CredentialsError" });
          return working;
        },
        onProblem: (p) => problems.push(p),
      },
    );
    const run = heartbeat.start([message("m1")]);
    try {
      await vi.advanceTimersByTimeAsync(1_000);
      expect(problems).toEqual([expect.objectContaining({ kind: "request", code: "CredentialsError" })]);
      expect(working.requests).toEqual([]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(working.requests).toEqual([["rh-m1"]]);
      expect(factoryCalls).toBe(2);
    } finally {
      await run.stop();
    }
  });
});
