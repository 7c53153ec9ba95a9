import { type DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DispatchedPayload,
  dispatchedExecution,
  type StepEffectContext,
} from "../../../src/durable/index.js";
import { createPrng, type Prng } from "../../../src/sim/prng.js";
import { orderOptions, runHistory, shuffled, violations } from "../harness.js";
import { STEP_ENGINES } from "./engines.js";
import type { StepEngineEnv } from "./under-test.js";

/**
 * The whole path on each engine, seeded: the orders' versions delivered duplicated and shuffled to the dispatcher
 * (Invokes failing before and losing their answer after starting; its commit moves the execution fence), then every
 * started execution run under LocalDurableTestRunner in a shuffled order, some twice (a second execution of the
 * event), each step crashing at random after its effects landed and before it returned. Counted from the sink: the
 * newest version's steps applied exactly once, its thumbnail the one kept, and an older execution's none (the newest
 * dispatch moved the fence before any ran).
 */
const SEEDS = [11, 12, 13];
const STEPS = ["resize", "notify"] as const;

/** A two-step workflow; `guarded: false` keys each attempt apart (an idempotency key per attempt), so the check can fail. */
function workflow(env: StepEngineEnv, prng: Prng, guarded = true) {
  return withDurableExecution(async (payload: DispatchedPayload, context: DurableContext) => {
    const statuses: Record<string, string> = {};
    for (const name of STEPS) {
      const outcome = await context.step(name, async (step) => {
        const out = await env.effects.commitStep(payload, guarded ? name : `${name}-${step.attempt}`, (ctx) =>
          effects(env, name, ctx),
        );
        if (step.attempt === 1 && prng.chance(0.4))
          throw new Error("crash between the effect and the checkpoint");
        return out.status;
      });
      statuses[name] = outcome;
      if (outcome === "stale") break;
    }
    return statuses;
  });
}

function effects(env: StepEngineEnv, step: string, ctx: StepEffectContext): void {
  ctx.atCommit(env.increment(ctx, `${step}#${ctx.executionName}`));
  if (step === "resize") ctx.atCommit(env.fencedPut(ctx, "thumbnail", ctx.identity));
  else ctx.atCommit(env.increment(ctx, "notifications"));
}

/** Dispatches a seeded history, runs its executions, and returns what the sink says is wrong. */
async function runSeed(env: StepEngineEnv, seed: number, guarded = true): Promise<string[]> {
  const prefix = `s${seed}-${Math.random().toString(36).slice(2, 8)}`;
  const h = await runHistory(seed, (lambda) => ({
    ...orderOptions(env.store, lambda),
    subject: (m) => `${prefix}-${(JSON.parse(m.body) as { orderId: string }).orderId}`,
    stepEffects: env.effects,
  }));
  const found = violations(h);
  const prng = createPrng(seed).fork("executions");
  const runs = shuffled(
    prng,
    h.payloads.flatMap((p) => (prng.chance(0.3) ? [p, p] : [p])),
  );
  const handlerFunction = workflow(env, prng, guarded);
  // One execution after another: each starts once the one before has returned its last invocation (SUCCEEDED or
  // FAILED, every step's effects applied). LocalDurableTestRunner's run() resolves only 100 ms later (it stops
  // polling its checkpoint server after a fixed real-time wait): awaited here, that idle tail was a third of the file.
  const finished: ReturnType<LocalDurableTestRunner<unknown>["run"]>[] = [];
  for (const p of runs) {
    let ended!: () => void;
    const lastInvocation = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const handler: typeof handlerFunction = async (event, context) => {
      const out = await handlerFunction(event, context);
      if (out.Status !== "PENDING") ended();
      return out;
    };
    const run = new LocalDurableTestRunner({ handlerFunction: handler }).run({ payload: JSON.parse(p) });
    finished.push(run);
    await Promise.race([lastInvocation, run.finally(ended)]);
  }
  for (const run of await Promise.all(finished))
    if (run.getStatus() !== "SUCCEEDED") found.push(`an execution ended ${run.getStatus()}`);
  const executions = h.payloads.map((p) => dispatchedExecution(JSON.parse(p)));
  const newest = new Map<string, (typeof executions)[number]>();
  for (const e of executions) newest.set(e.subject, e); // the last start is the newest (checked by violations)
  for (const e of executions) {
    for (const step of STEPS) {
      const n = await env.count(e.subject, `${step}#${e.executionName}`);
      // Every dispatch committed before the first run, each moving the fence: only the newest execution writes.
      const want = newest.get(e.subject) === e ? 1 : 0;
      if (n !== want) found.push(`${e.identity} of ${e.subject}: ${step} applied ${n} times, not ${want}`);
    }
  }
  for (const [subject, e] of newest) {
    const kept = await env.value(subject, "thumbnail");
    if (kept !== e.identity) found.push(`${subject}: thumbnail of ${kept}, not of the newest ${e.identity}`);
    const total = await env.count(subject, "notifications");
    let sum = 0;
    for (const x of executions.filter((y) => y.subject === subject))
      sum += await env.count(subject, `notify#${x.executionName}`);
    if (total !== sum) found.push(`${subject}: ${total} notifications, ${sum} notify steps applied`);
  }
  return found;
}

beforeAll(async () => {
  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: true });
});
afterAll(async () => {
  await LocalDurableTestRunner.teardownTestEnvironment();
});

describe.each(STEP_ENGINES)("dispatcher and guarded steps under faults: $name", (engine) => {
  let env: StepEngineEnv;
  beforeAll(async () => {
    env = await engine.open();
  });
  afterAll(async () => {
    await env?.close();
  });

  for (const seed of SEEDS) {
    it(`seed ${seed}: each event starts once, newest last; each step's effect once, counted from the sink`, async () => {
      expect(await runSeed(env, seed)).toEqual([]);
    });
  }

  it("finds the double effects of steps keyed per attempt (the check can fail)", async () => {
    // The seeds in turn until one shows a double effect (the first does on every engine today): each further seed
    // would only repeat the finding, at the cost of a whole history.
    let doubles = 0;
    for (const seed of SEEDS) {
      doubles += (await runSeed(env, seed, false)).filter((f) => f.includes("applied 2 times")).length;
      if (doubles > 0) break;
    }
    expect(doubles).toBeGreaterThan(0);
  });
});
