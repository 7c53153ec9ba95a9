import type { OutboxBreak } from "./broken.js";
import { workerLoop } from "./delivery.js";
import { plantForeign } from "./foreign-values.js";
import {
  afterStep,
  createWorker,
  finishHistory,
  type HistoryDeps,
  type HistoryResult,
  setUp,
} from "./history.js";
import type { HistoryConfig } from "./history-config.js";
import { checkOutbox } from "./outbox-checks.js";
import type { OutboxSettings } from "./outbox-config.js";
import { consumerLoop } from "./outbox-consumer.js";
import { SimQueue } from "./outbox-queue.js";
import { RelayFaults, relaySlot } from "./outbox-relay.js";
import type { RunningHistory } from "./running-history.js";
import { planMessages, type RunningOutboxHistory } from "./running-outbox-history.js";

/** Where the histories publish: an SQS queue by URL (FIFO by its suffix); the simulated queue stands for it. */
const QUEUE_URL = "http://127.0.0.1:1/000000000000/chaos";

/**
 * An outbox history (`npm run chaos -- --outbox`): publish at commit, end to end. The guard history's events, queue,
 * workers, faults and final checks (history.ts), each handler run publishing its event's 1–3 messages through
 * `ctx.publish` into the engine's outbox (`Backend.outbox`), folded into its commit; 1–3 copies of the real relay
 * (`relayOutbox`, outbox-relay.ts) racing on virtual time, crashing, stalling past their lease, losing sends, claims
 * and marks, restarting; the destination queue (outbox-queue.ts: standard, or FIFO with its deduplication window);
 * downstream consumers guarded by message id (outbox-consumer.ts). Checked at the end (outbox-checks.ts, O1–O5)
 * besides I1–I7 upstream and down.
 */
export async function runOutboxHistory(
  base: HistoryConfig,
  os: OutboxSettings,
  deps: HistoryDeps,
  broken?: OutboxBreak,
): Promise<HistoryResult> {
  // A stall past the deduplication window (5 minutes) and the relays' polls take virtual time and steps.
  const cfg: HistoryConfig = { ...base, maxSteps: 3 * base.maxSteps, maxVirtualMs: 3 * base.maxVirtualMs };
  const { run, beyondSkew, shared } = setUp(cfg, deps);
  const simOutbox = await run.backend.outbox?.(run.sim.clock(0));
  if (!simOutbox) throw new Error(`the ${run.backend.name} engine has no outbox in the simulator yet`);
  run.outbox = simOutbox.outbox;
  const queue = queueOf(run, cfg, os);
  const plan = planMessages(run, os.maxMessages);
  const o: RunningOutboxHistory = {
    history: run,
    shared,
    os,
    outbox: simOutbox,
    queue,
    broken,
    plan,
    planned: new Map([...plan.values()].flat().map((m) => [m.id, m])),
    strays: new Map(),
    consumed: new Map(),
    upstreamDone: () => run.workersDone >= cfg.workers,
  };
  // The consumers' state is sampled and may expire as the upstream state is.
  for (const m of o.planned.values()) run.keys.push(m.target.key);
  run.publish = publisher(o, `${QUEUE_URL}${os.fifo ? ".fifo" : ""}`);
  const checkReader = await run.sim.track(() => simOutbox.reader());

  await plantForeign(run);
  const workers = Array.from({ length: cfg.workers }, (_, id) => createWorker(run, shared, id));
  for (const w of workers) void workerLoop(run, w);
  const relayFaults = new RelayFaults(o);
  let relaysDone = 0;
  let consumersDone = 0;
  for (let i = 0; i < os.relays; i++)
    void relaySlot(o, relayFaults, i).then(() => {
      // Every relay quiescent: nothing more is sent (nor, broken, published from a handler: upstream is done).
      if (++relaysDone === os.relays) queue.close();
    });
  for (let c = 0; c < os.consumers; c++) void consumerLoop(o, c).then(() => void consumersDone++);
  const finished = await run.sim.run({
    maxSteps: cfg.maxSteps,
    maxVirtualMs: cfg.maxVirtualMs,
    afterStep: () => afterStep(run, deps.sampleEvery),
  });
  const downstream = relaysDone === os.relays && consumersDone === os.consumers;
  if (!downstream)
    run.observer.log(
      () => `relays ${relaysDone}/${os.relays} quiescent, consumers ${consumersDone}/${os.consumers} done`,
    );
  await checkOutbox(o, checkReader, finished && downstream && run.workersDone === cfg.workers);
  return finishHistory(run, beyondSkew, finished && downstream, cfg.workers);
}

/** The destination: a standard or FIFO queue with the history's source settings. */
function queueOf(run: RunningOutboxHistory["history"], cfg: HistoryConfig, os: OutboxSettings): SimQueue {
  return new SimQueue(run.sim, run.chooser, run.faults, {
    fifo: os.fifo,
    visibilityMs: cfg.source.visibilityMs,
    retryDelayMs: cfg.source.retryDelayMs,
    maxReceives: cfg.source.maxReceives,
    duplicateRate: os.duplicateRate,
  });
}

/**
 * Each handler run publishes its event's messages, with the run's fence in the body; the id `ctx.publish` returns is
 * the one the event and the name give (O3). Broken (`publish-outside-commit`): the handler sends them itself.
 */
function publisher(o: RunningOutboxHistory, queueUrl: string): NonNullable<RunningHistory["publish"]> {
  const { history } = o;
  return (e, ctx) => {
    for (const m of o.plan.get(e.index) ?? []) {
      const body = { e: e.index, m: m.name, f: ctx.fence };
      if (o.broken === "publish-outside-commit") {
        const message = {
          messageId: m.id,
          body: JSON.stringify(body),
          subject: e.subject,
          groupId: e.subject,
        };
        o.queue.send(message, `a handler of f${ctx.fence}`);
        continue;
      }
      const id = ctx.publish({ kind: "sqs", queueUrl }, body, m.given !== undefined ? { name: m.given } : {});
      if (id !== m.id)
        history.observer.violate(
          "O3",
          true,
          `publish of ${m.name} of ${e.subject}/${e.identity} returned ${id}, not ${m.id}`,
        );
    }
  };
}
