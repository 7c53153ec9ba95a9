import type { SQSRecord } from "aws-lambda";
import type { Clock } from "../core/clock.js";
import { stateKey } from "../core/state-key.js";
import { durableSqsDispatcher } from "../durable/dispatcher.js";
import { type DispatchedPayload, dispatchedExecution } from "../durable/payload.js";
import type { StepEffectOutcome, StepEffects } from "../durable/step-effects.js";
import type { StepIdentity } from "../durable/step-keys.js";
import type { Backend, EffectTarget } from "./backend.js";
import type { Chooser } from "./chooser.js";
import type { HistoryResult } from "./history.js";
import type { InvariantId, Violation } from "./observer.js";
import { quiet } from "./quiet.js";

/**
 * Durable histories (`npm run chaos -- --durable`): the dispatcher (`durableSqsDispatcher`, the engine's store, the
 * fence move folded into its commit) on duplicated, shuffled deliveries; the executions it started, run as the
 * durable SDK runs them (replay: a checkpointed step returns its result, the first one without a checkpoint runs),
 * interleaved in any order with the deliveries and each other, some a second time (an execution of the same event
 * after the dispatcher forgot it); steps that crash between their effects and their checkpoint; one `charge` step
 * per order line (repeated step names), keyed by the SDK's step ids; `stop`. Every guarded step's fence, marker time
 * and randomness come from the history's clock and seed. Checked: each step's effect applied at most once per
 * (execution, step identity), and exactly once when it was answered applied (I1); no step of an older or stopped
 * execution landing after a newer one's or the stop (I2); every event acknowledged, the newest execution of each
 * subject (and each event without a position) applied whole unless stopped, the sink ending at the newest (I4).
 */
export interface DurableHistoryDeps {
  chooser: Chooser;
  backend: Backend;
  /** Prefix of the history's subjects (histories on a server share its tables). */
  namespace: string;
  /** `--break step-name-markers`: every step keyed by its name only, as before step ids (a repeated name skips). */
  nameKeyedSteps?: boolean;
  trace?: boolean;
}

/** What one order line's step, or the shipping step, is: the workflow of every execution. */
interface Step extends StepIdentity {
  ship: boolean;
}

/** One run of an execution (the durable SDK's): its payload and checkpoints, by step id. */
interface Instance {
  payload: DispatchedPayload;
  checkpoints: Map<string, StepEffectOutcome<unknown>>;
  done: boolean;
}

interface Landing {
  subject: string;
  pos: string | null;
  exec: string;
  step: string;
  tick: number;
}

const MAX_TICKS = 400;

/** Runs one durable history on `deps.backend` (whose engine has `stepEffects`). */
export async function runDurableHistory(deps: DurableHistoryDeps): Promise<HistoryResult> {
  const h = new DurableHistory(deps);
  return h.run();
}

class DurableHistory {
  readonly #d: DurableHistoryDeps;
  readonly #c: Chooser;
  readonly #violations: Violation[] = [];
  readonly #trace: string[] = [];
  readonly #faults: Record<string, number> = {};
  readonly #effects: StepEffects;
  /** Body of each event: its subject, version (ordered) or id, and order lines. */
  readonly #events: { subject: string; version?: number; id: string; lines: number }[] = [];
  readonly #queue: SQSRecord[] = [];
  readonly #started = new Map<string, DispatchedPayload>();
  readonly #instances: Instance[] = [];
  /** Answers per (execution, step id): what the step was told. */
  readonly #answers = new Map<string, Set<string>>();
  readonly #landings: Landing[] = [];
  readonly #stops = new Map<string, number>();
  #tick = 0;
  #deliveries = 0;
  #messageIds = 0;

  constructor(deps: DurableHistoryDeps) {
    this.#d = deps;
    this.#c = deps.chooser;
    const step = deps.backend.stepEffects;
    if (!step) throw new Error(`the ${deps.backend.name} engine has no durable steps in the simulator`);
    this.#effects = step.call(deps.backend, this.#clock());
  }

  /** Virtual time: a few ms per tick, seeded jitter; randomness from the history's seed. */
  #clock(): Clock {
    return {
      now: () => 1_800_000_000_000 + this.#tick * 10 + this.#c.int(0, 9),
      sleep: async () => {},
      random: () => this.#c.random(),
    };
  }

  async run(): Promise<HistoryResult> {
    this.#plan();
    const dispatch = durableSqsDispatcher({
      store: this.#d.backend.store,
      lambda: { send: async (command: { input: Record<string, unknown> }) => this.#invoke(command.input) },
      functionName: "orders-workflow:live",
      messages: "accept",
      subject: (m) => body(m.body).subject,
      identity: (m) => body(m.body).id,
      position: (m) => body(m.body).version,
      detail: (e) => ({ lines: e.kind === "message" ? body(e.body).lines : 0 }),
      stepEffects: this.#effects,
      waitIntervalMs: 1,
      maxWaitIntervalMs: 4,
      ...quiet(),
    });
    while (this.#tick < MAX_TICKS && (this.#queue.length > 0 || this.#instances.some((i) => !i.done))) {
      this.#tick++;
      const live = this.#instances.filter((i) => !i.done);
      const deliver = this.#queue.length > 0 && (live.length === 0 || this.#c.chance(0.4));
      if (deliver) await this.#deliver(dispatch);
      else await this.#stepOf(live[this.#c.choose(live.length, "execution")] as Instance);
      if (this.#started.size > 0 && this.#c.chance(0.02)) await this.#stop();
    }
    await this.#check();
    return this.#result();
  }

  /** 1–2 ordered subjects with 1–3 versions and 0–1 events without a position, 1–3 order lines each. */
  #plan(): void {
    const ns = this.#d.namespace;
    const subjects = this.#c.int(1, 2);
    for (let s = 0; s < subjects; s++)
      for (let v = 1; v <= this.#c.int(1, 3); v++)
        this.#events.push({ subject: `${ns}order-${s}`, version: v, id: `v${v}`, lines: this.#c.int(1, 3) });
    if (this.#c.chance(0.5)) this.#events.push({ subject: `${ns}gift`, id: "g1", lines: this.#c.int(1, 3) });
    for (const e of this.#events)
      for (let copy = 0; copy < this.#c.int(1, 2); copy++)
        this.#queue.push(this.#record(JSON.stringify(e), 1));
    shuffle(this.#c, this.#queue);
  }

  #record(text: string, receives: number, messageId = `m${this.#messageIds++}`): SQSRecord {
    return {
      messageId,
      receiptHandle: `${messageId}-${receives}`,
      body: text,
      attributes: {
        ApproximateReceiveCount: String(receives),
        SentTimestamp: "1714564800000",
        SenderId: "chaos",
        ApproximateFirstReceiveTimestamp: "1714564800005",
      },
      messageAttributes: {},
      md5OfBody: "",
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:us-east-1:123456789012:chaos",
      awsRegion: "us-east-1",
    };
  }

  /** A batch of 1–3 records to the dispatcher; what it fails comes back later, its receive count one higher. */
  async #deliver(dispatch: ReturnType<typeof durableSqsDispatcher>): Promise<void> {
    const batch = this.#queue.splice(0, this.#c.int(1, 3));
    this.#deliveries += batch.length;
    const out = await dispatch({ Records: batch }, simContext());
    const failed = new Set(out.batchItemFailures.map((f) => f.itemIdentifier));
    for (const r of batch.filter((x) => failed.has(x.messageId))) {
      const receives = Number(r.attributes.ApproximateReceiveCount) + 1;
      this.#queue.splice(this.#c.int(0, this.#queue.length), 0, this.#record(r.body, receives, r.messageId));
    }
  }

  /** Lambda's answer to a durable start: one execution per name (a second start with its payload finds it). */
  #invoke(input: Record<string, unknown>): { StatusCode: number; DurableExecutionArn: string } {
    const name = String(input.DurableExecutionName);
    if (!this.#started.has(name)) {
      const payload = JSON.parse(new TextDecoder().decode(input.Payload as Uint8Array)) as DispatchedPayload;
      this.#started.set(name, payload);
      this.#instances.push({ payload, checkpoints: new Map(), done: false });
      this.#log(`start ${name}`);
    }
    // A second execution of the event, as after the dispatcher forgot it and Lambda's retention ended.
    if (this.#c.chance(0.1)) {
      this.#instances.push({
        payload: this.#started.get(name) as DispatchedPayload,
        checkpoints: new Map(),
        done: false,
      });
      this.#count("second-execution");
    }
    return {
      StatusCode: 202,
      DurableExecutionArn: `arn:aws:lambda:us-east-1:123456789012:function:wf/${name}`,
    };
  }

  /** One invocation's worth of an execution: replays its checkpoints, runs the next step, may crash before its checkpoint. */
  async #stepOf(instance: Instance): Promise<void> {
    const step = stepsOf(instance.payload).find((s) => !instance.checkpoints.has(s.id));
    if (!step) {
      instance.done = true;
      return;
    }
    const exec = dispatchedExecution(instance.payload);
    const target = this.#target(instance.payload, step);
    const outcome = await this.#effects.commitStep(
      instance.payload,
      this.#d.nameKeyedSteps ? step.name : { name: step.name, id: step.id },
      (ctx) => {
        ctx.atCommit(this.#d.backend.counter(target, ctx.fence));
        if (step.ship && exec.position !== null)
          ctx.atCommit(this.#d.backend.sinkAtomic(target, exec.position, ctx.fence));
        return step.id;
      },
    );
    const key = target.counterId;
    const seen = this.#answers.get(key) ?? new Set<string>();
    seen.add(outcome.status);
    this.#answers.set(key, seen);
    this.#log(`${exec.executionName} step ${step.id} ${step.name}: ${outcome.status}`);
    if (outcome.status === "processed")
      this.#landings.push({
        subject: exec.subject,
        pos: exec.position,
        exec: exec.executionName,
        step: step.id,
        tick: this.#tick,
      });
    if (this.#c.chance(0.25)) {
      this.#count("crash-before-checkpoint");
      return; // the step runs again on the next invocation
    }
    instance.checkpoints.set(step.id, outcome);
    if (outcome.status === "stale") instance.done = true;
  }

  async #stop(): Promise<void> {
    const names = [...this.#started.keys()];
    const name = names[this.#c.choose(names.length, "stop")] as string;
    const answer = await this.#effects.stop(this.#started.get(name) as DispatchedPayload);
    this.#count("stop");
    this.#log(`stop ${name}: ${answer}`);
    if (answer === "stopped" && !this.#stops.has(name)) this.#stops.set(name, this.#tick);
  }

  #target(payload: DispatchedPayload, step: Step): EffectTarget {
    const e = payload.execution;
    return {
      counterId: `${this.#d.namespace}${e.executionName}@${step.id}`,
      subject: e.subject,
      identity: e.identity,
      key: stateKey(e.subject, e.identity, e.position !== null),
    };
  }

  async #check(): Promise<void> {
    if (this.#queue.length > 0) this.#violate("I4", `${this.#queue.length} deliveries never acknowledged`);
    if (this.#instances.some((i) => !i.done)) this.#violate("I4", "an execution never finished");
    for (const payload of this.#started.values()) {
      for (const step of stepsOf(payload)) {
        const target = this.#target(payload, step);
        const { count } = await this.#d.backend.readCounter(target);
        const answers = [...(this.#answers.get(target.counterId) ?? [])];
        if (count > 1) this.#violate("I1", `${target.counterId} (${step.name}) applied ${count} times`);
        if (count === 0 && answers.some((a) => a !== "stale"))
          this.#violate(
            "I1",
            `${target.counterId} (${step.name}) answered ${answers.join("/")}, never applied`,
          );
      }
    }
    this.#checkOrder();
    await this.#checkNewest();
  }

  /** Per subject, landings never go back by position; nothing of a stopped execution lands after its stop. */
  #checkOrder(): void {
    const newest = new Map<string, string>();
    for (const l of this.#landings) {
      const stoppedAt = this.#stops.get(l.exec);
      if (stoppedAt !== undefined && l.tick > stoppedAt)
        this.#violate("I2", `${l.exec} step ${l.step} landed after its execution was stopped`);
      if (l.pos === null) continue;
      const before = newest.get(l.subject);
      if (before !== undefined && l.pos < before)
        this.#violate(
          "I2",
          `${l.exec} (position ${l.pos}) step ${l.step} landed after a step of position ${before}`,
        );
      if (before === undefined || l.pos > before) newest.set(l.subject, l.pos);
    }
  }

  /** The newest execution of each subject (each event without a position) applied whole, unless stopped. */
  async #checkNewest(): Promise<void> {
    const wanted = new Map<string, { subject: string; version?: number; id: string }>();
    for (const e of this.#events) {
      const k = e.version === undefined ? `${e.subject}#${e.id}` : e.subject;
      const w = wanted.get(k);
      if (!w || (w.version ?? 0) < (e.version ?? 0)) wanted.set(k, e);
    }
    for (const e of wanted.values()) {
      const payload = [...this.#started.values()].find(
        (p) => p.execution.subject === e.subject && p.execution.identity === e.id,
      );
      if (!payload) {
        this.#violate("I4", `the newest event ${e.id} of ${e.subject} never started`);
        continue;
      }
      if (this.#stops.has(payload.execution.executionName)) continue;
      for (const step of stepsOf(payload)) {
        const { count } = await this.#d.backend.readCounter(this.#target(payload, step));
        if (count !== 1)
          this.#violate("I4", `${e.id} of ${e.subject}: step ${step.id} ${step.name} applied ${count} times`);
      }
      const pos = payload.execution.position;
      if (pos !== null) {
        const row = await this.#d.backend.readSink(e.subject);
        if (row?.pos !== pos)
          this.#violate("I4", `sink of ${e.subject} at ${row?.pos}, not the newest ${pos}`);
      }
    }
  }

  #violate(invariant: InvariantId, message: string): void {
    this.#violations.push({
      invariant,
      fencing: true,
      message: `durable: ${message}`,
      atMs: this.#tick * 10,
    });
    this.#log(`VIOLATION ${invariant}: ${message}`);
  }

  #count(kind: string): void {
    this.#faults[kind] = (this.#faults[kind] ?? 0) + 1;
  }

  #log(line: string): void {
    if (this.#d.trace) this.#trace.push(`t${this.#tick} ${line}`);
  }

  #result(): HistoryResult {
    return {
      violations: this.#violations,
      beyondSkew: false,
      allViolations: this.#violations,
      faults: this.#faults as HistoryResult["faults"],
      completed: this.#queue.length === 0 && this.#instances.every((i) => i.done),
      steps: this.#tick,
      virtualMs: this.#tick * 10,
      deliveries: this.#deliveries,
      knownIssues: [],
      ...(this.#d.trace ? { trace: this.#trace } : {}),
    };
  }
}

/** The workflow: one `charge` per order line (the same name each time), then `ship`; ids as the SDK numbers them. */
function stepsOf(payload: DispatchedPayload): Step[] {
  const lines = (payload.detail as { lines: number }).lines;
  const steps: Step[] = [];
  for (let i = 0; i < lines; i++) steps.push({ name: "charge", id: String(i + 1), ship: false });
  steps.push({ name: "ship", id: String(lines + 1), ship: true });
  return steps;
}

function body(text: string): { subject: string; version?: number; id: string; lines: number } {
  return JSON.parse(text);
}

function shuffle<T>(c: Chooser, xs: T[]): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = c.choose(i + 1, "shuffle");
    [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
  }
}

function simContext() {
  return {
    functionName: "dispatcher",
    functionVersion: "1",
    invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:dispatcher",
    memoryLimitInMB: "128",
    awsRequestId: "chaos",
    logGroupName: "/aws/lambda/dispatcher",
    logStreamName: "chaos",
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 60_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
