import type { Context } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { AsyncInvoker } from "../../src/local/delivery/async-invoke.js";
import { currentInvocation, faultPoint } from "../../src/local/delivery/invocation-scope.js";
import {
  type AnyLambdaHandler,
  type InjectedFailure,
  LocalFunction,
} from "../../src/local/delivery/local-function.js";
import { createSimulation, type Simulation } from "../../src/sim/live/simulation.js";
import type { TraceEvent } from "../../src/sim/live/trace.js";
import { deferred, sleep } from "../kit/index.js";

let deps: Simulation;
const fresh = () => {
  deps = createSimulation(1);
  return deps;
};
afterEach(() => deps?.sleeper.stop());

const fn = (
  handler: AnyLambdaHandler,
  options: Partial<ConstructorParameters<typeof LocalFunction>[0]> = {},
) => new LocalFunction({ name: "f", handler, ...options }, deps ?? fresh());

describe("local Lambda runner", () => {
  it("passes a Lambda context: request id, ARN, a remaining time that counts down", async () => {
    fresh();
    const seen: { ctx: Context; first: number; second: number }[] = [];
    const f = fn(
      async (_e: unknown, ctx: Context) => {
        const first = ctx.getRemainingTimeInMillis();
        await sleep(30);
        seen.push({ ctx, first, second: ctx.getRemainingTimeInMillis() });
        return "ok";
      },
      { timeoutMs: 2000 },
    );
    const run = await f.invoke({});
    expect(run).toMatchObject({ status: "succeeded", result: "ok" });
    const [s] = seen;
    expect(s?.ctx.awsRequestId).toBe(run.requestId);
    expect(s?.ctx.invokedFunctionArn).toBe("arn:aws:lambda:us-east-1:000000000000:function:f");
    expect(s?.first).toBeLessThanOrEqual(2000);
    expect(s?.second).toBeLessThan(s?.first ?? 0);
  });

  it("runs at most `concurrency` handlers at once", async () => {
    fresh();
    let running = 0;
    let peak = 0;
    const f = fn(
      async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(20);
        running--;
      },
      { concurrency: 3 },
    );
    await Promise.all(Array.from({ length: 12 }, () => f.invoke({})));
    expect(peak).toBe(3);
    expect(f.runs).toBe(12);
  });

  it("fails a run at its timeout, aborts its signal, and lets it finish later as a zombie", async () => {
    fresh();
    const finish = deferred();
    let aborted: boolean | undefined;
    let finished = false;
    const f = fn(
      async () => {
        const signal = currentInvocation()?.signal;
        await finish.promise;
        aborted = signal?.aborted;
        finished = true;
      },
      { timeoutMs: 50 },
    );
    const run = await f.invoke({});
    expect(run.status).toBe("timed-out");
    expect(finished).toBe(false);
    expect(f.active).toBe(0); // the slot is free again
    finish.resolve();
    await deps.activity.idle();
    expect(finished).toBe(true);
    expect(aborted).toBe(true);
    const zombie = deps.trace.events.find((e) => e.type === "zombie-end");
    expect(zombie).toMatchObject({ runId: run.runId });
  });

  it("injects failures before (handler not called) and after (handler ran) its effect", async () => {
    fresh();
    let calls = 0;
    const handler = async () => {
      calls++;
    };
    const before = new LocalFunction({ name: "b", handler, faults: { failBeforeRate: 1 } }, deps);
    const after = new LocalFunction({ name: "a", handler, faults: { failAfterRate: 1 } }, deps);
    const b = await before.invoke({});
    expect(b.status).toBe("failed");
    expect((b.error as InjectedFailure).when).toBe("before");
    expect(calls).toBe(0);
    const a = await after.invoke({});
    expect((a.error as InjectedFailure).when).toBe("after");
    expect(calls).toBe(1);
    // Retries (attempt 2) run clean by default.
    expect((await before.invoke({}, { attempt: 2 })).status).toBe("succeeded");
  });

  it("slows a run at its fault point, and crashes one there: the rest of the handler never runs", async () => {
    fresh();
    const reached: string[] = [];
    const handler = async () => {
      reached.push("read");
      await faultPoint();
      reached.push("write");
    };
    const slow = new LocalFunction({ name: "s", handler, faults: { slowRate: 1, slowMs: 60 } }, deps);
    const s = await slow.invoke({});
    expect(s.status).toBe("succeeded");
    expect(s.faults.slowMs).toBe(60);
    expect(reached).toEqual(["read", "write"]);
    reached.length = 0;
    const crash = new LocalFunction({ name: "c", handler, faults: { crashRate: 1 } }, deps);
    const c = await crash.invoke({});
    expect(c.status).toBe("crashed");
    await deps.activity.idle(); // a crashed run does not keep the runtime busy
    expect(reached).toEqual(["read"]);
    // Stopping unwinds the crashed code with an error, never by running its effect.
    deps.sleeper.stop();
    crash.unwindCrashed();
    await sleep(10);
    expect(reached).toEqual(["read"]);
  });

  it("stopCrashed: keep leaves crashed code dead (no finally runs, so no release); release unwinds it", async () => {
    fresh();
    const ended: string[] = [];
    const handler = (name: string) => async () => {
      try {
        await faultPoint();
      } finally {
        ended.push(name); // where a guard releases its claim
      }
    };
    const keep = new LocalFunction({ name: "k", handler: handler("k"), faults: { crashRate: 1 } }, deps);
    const release = new LocalFunction({ name: "r", handler: handler("r"), faults: { crashRate: 1 } }, deps);
    expect((await keep.invoke({})).status).toBe("crashed");
    expect((await release.invoke({})).status).toBe("crashed");
    deps.sleeper.stop();
    keep.stopCrashed("keep");
    release.stopCrashed("release");
    // Runs that crash after the stop get the same.
    expect((await keep.invoke({})).status).toBe("crashed");
    expect((await release.invoke({})).status).toBe("crashed");
    await sleep(20);
    expect(ended).toEqual(["r", "r"]);
  });
});

describe("asynchronous invoke (S3, EventBridge)", () => {
  const deliveries = (events: TraceEvent[]) =>
    events.filter((e): e is Extract<TraceEvent, { type: "delivery" }> => e.type === "delivery");

  it("retries a failing event twice with the same request id, then dead-letters it", async () => {
    fresh();
    const f = fn(async () => {
      throw new Error("boom");
    });
    const invoker = new AsyncInvoker(f, "direct", { retryDelaysMs: [5, 10] }, deps);
    invoker.deliver({ Records: [] }, ["req-1"]);
    await deps.activity.idle();
    const d = deliveries(deps.trace.events);
    expect(d.map((x) => x.attempt)).toEqual([1, 2, 3]);
    expect(new Set(d.map((x) => x.requestId)).size).toBe(1);
    expect(new Set(d.map((x) => x.runId)).size).toBe(3);
    expect(invoker.failed).toHaveLength(1);
    expect(deps.trace.events.filter((e) => e.type === "dead-letter")).toHaveLength(1);
  });

  it("stops retrying once a run succeeds", async () => {
    fresh();
    let calls = 0;
    const f = fn(async () => {
      if (++calls === 1) throw new Error("first");
    });
    const invoker = new AsyncInvoker(f, "direct", { retryDelaysMs: [5] }, deps);
    invoker.deliver({}, ["req-2"]);
    await deps.activity.idle();
    expect(calls).toBe(2);
    expect(invoker.failed).toHaveLength(0);
  });

  it("sends duplicates as separate invocations with their own request ids", async () => {
    fresh();
    const f = fn(async () => {});
    const invoker = new AsyncInvoker(f, "eventbridge", { faults: { duplicateRate: 1 } }, deps);
    invoker.deliver({}, ["evt"]);
    await deps.activity.idle();
    const d = deliveries(deps.trace.events);
    expect(d).toHaveLength(2);
    expect(d.filter((x) => x.duplicate)).toHaveLength(1);
    expect(d[0]?.requestId).not.toBe(d[1]?.requestId);
  });
});

describe("fault point across module copies", () => {
  it("a bundled handler (its own copy of the scope module) still reaches the runner's fault point", async () => {
    const { build } = await import("esbuild");
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { pathToFileURL } = await import("node:url");
    const dir = await mkdtemp(join(tmpdir(), "eonce-bundle-"));
    try {
      const outfile = join(dir, "handler.mjs");
      await build({
        entryPoints: ["test/local/fixtures/fault-point-handler.ts"],
        bundle: true,
        platform: "node",
        format: "esm",
        outfile,
        logLevel: "silent",
      });
      const bundled = (await import(pathToFileURL(outfile).href)) as { handler: AnyLambdaHandler };
      fresh();
      const f = fn(bundled.handler, { faults: { slowRate: 1, slowMs: 300 }, timeoutMs: 5000 });
      const run = await f.invoke({});
      expect(run.status).toBe("succeeded");
      // The pause happened at the bundled handler's fault point, not after it returned.
      expect((run.result as { pausedMs: number }).pausedMs).toBeGreaterThanOrEqual(290);
      const traced = deps.trace.events.find((e) => e.type === "run");
      expect(traced).not.toHaveProperty("faultPointMissed");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("says so when slowness was drawn but the handler reached no fault point", async () => {
    fresh();
    const f = fn(async () => "no fault point here", { faults: { slowRate: 1, slowMs: 50 } });
    const clean = fn(async () => "no fault point, no fault", {});
    await f.invoke({});
    await clean.invoke({});
    const runs = deps.trace.events.filter((e) => e.type === "run");
    expect(runs.map((e) => e.type === "run" && e.faultPointMissed === true)).toEqual([true, false]);
  });
});
