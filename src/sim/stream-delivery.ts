import type { KinesisStreamRecord } from "aws-lambda";
import { isAcknowledged } from "../core/outcomes.js";
import { comparePositions } from "../core/position.js";
import type { StateStore } from "../core/store.js";
import type { InvocationResult } from "../lambda/invocation.js";
import type { WrapperMode } from "../lambda/options.js";
import type { RunningHistory } from "./running-history.js";
import type { SimEvent } from "./sim-event.js";
import type { StreamSettings } from "./stream-config.js";
import type { SimStream, StreamBatch } from "./stream-source.js";
import { VIRTUAL_EPOCH_MS } from "./virtual-time.js";
import {
  type Answer,
  batchAnswer,
  checkNotCommitted,
  createWorker,
  handlerOf,
  recordOutcome,
  type WrapperWorker,
} from "./wrapper-delivery.js";

/** A Lambda instance of a stream history: the real Kinesis wrapper's runner per mode, over one call guard. */
export type StreamWorker = WrapperWorker;

type StreamResult = Extract<InvocationResult<Answer>, { kind: "stream" }>;

/** The partition key, identity and position of the record's simulated event: the history's own keys. */
export function createStreamWorker(
  run: RunningHistory,
  shared: StateStore,
  id: number,
  ss: StreamSettings,
): StreamWorker {
  return createWorker(run, shared, id, "kinesisHandler", ss.concurrency, {
    newestPerSubject: ss.newestPerSubject,
  });
}

/** A Lambda instance takes batches of the stream's lanes until every record is past its checkpoint. */
export async function streamWorkerLoop(
  run: RunningHistory,
  stream: SimStream,
  w: StreamWorker,
  ss: StreamSettings,
): Promise<void> {
  for (;;) {
    const batch = stream.take(ss.maxBatch);
    if (batch === "done") break;
    if ("waitMs" in batch) await run.sim.sleep(batch.waitMs);
    else await invoke(run, stream, w, ss, batch);
  }
  run.workersDone++;
}

/** One invocation of the Kinesis wrapper on a batch: its answer checked, then the checkpoint moved. */
async function invoke(
  run: RunningHistory,
  stream: SimStream,
  w: StreamWorker,
  ss: StreamSettings,
  b: StreamBatch,
) {
  const mode: WrapperMode = run.chooser.chance(run.cfg.applyShare) ? "apply" : "run";
  const records = b.records.map((r) => kinesisRecord(run, r));
  w.deadline = b.deadline;
  w.calls.length = 0;
  run.observer.log(
    () =>
      `w${w.id} receives ${mode} batch ${b.records.map((r) => `${r.seq}=${describe(run, r.event)}`).join(" ")}`,
  );
  const result = await batchAnswer(run, w, mode, handlerOf(run, ss, mode), records, "kinesis");
  run.sampleDue = true;
  if (run.sim.now >= b.deadline || !result) {
    run.observer.log(() => `w${w.id} batch timed out or failed whole: the checkpoint stays`);
    stream.answer(b, 0, true);
    return;
  }
  const failedAt = await checkAnswer(run, w, b, result, ss.newestPerSubject);
  run.observer.log(
    () => `w${w.id} checkpoint ${failedAt === -1 ? "past the batch" : `at record ${failedAt}`}`,
  );
  for (const [i, r] of b.records.entries()) {
    const report = result.report.deliveries.find((d) => d.recordIndex === i);
    const acknowledged = failedAt === -1 || i < failedAt;
    recordOutcome(run, w, r.event, mode, String(r.seq), report, acknowledged);
  }
  stream.answer(b, failedAt, false);
}

/**
 * I4 for a stream batch: every record has one report; the answer names exactly the first record not acknowledged
 * (Lambda resumes the shard there), or nothing when every one is; no record ran after an earlier record of its
 * subject failed in the batch (it must be `deferred`). I6: a failed record's own commit did not land. Returns the
 * index of the first failed record, -1 when none.
 */
async function checkAnswer(
  run: RunningHistory,
  w: StreamWorker,
  b: StreamBatch,
  result: StreamResult,
  newestPerSubject: boolean,
): Promise<number> {
  const { observer } = run;
  let firstFailed = -1;
  const failedSubjects = new Set<string>();
  if (newestPerSubject) checkNewestFirst(run, w, b, result);
  for (const [i, r] of b.records.entries()) {
    const reports = result.report.deliveries.filter((d) => d.recordIndex === i);
    const report = reports[0];
    if (reports.length !== 1 || !report) {
      observer.violate("I4", false, `w${w.id}: record ${r.seq} has ${reports.length} reports`);
      continue;
    }
    const statuses = report.events.map((x) => x.status);
    const acknowledged = statuses.length > 0 && statuses.every((s) => isAcknowledged(s));
    if (report.ok !== acknowledged)
      observer.violate(
        "I4",
        false,
        `w${w.id}: record ${r.seq} ended ${statuses.join(",")} but ok=${report.ok}`,
      );
    const subject = (run.events[r.event] as SimEvent).subject;
    // newestPerSubject runs a subject's records newest first (checkNewestFirst): an older record after a failure.
    if (!newestPerSubject && failedSubjects.has(subject) && statuses.some((s) => s !== "deferred"))
      observer.violate(
        "I4",
        false,
        `w${w.id}: record ${r.seq} ran after an earlier record of ${subject} failed`,
      );
    if (!report.ok) {
      failedSubjects.add(subject);
      if (firstFailed === -1) firstFailed = i;
      if (!statuses.includes("unconfirmed"))
        await checkNotCommitted(run, w, r.event, String(r.seq), statuses);
    }
  }
  const named = result.response.batchItemFailures.map((f) => f.itemIdentifier);
  const expected = firstFailed === -1 ? [] : [String(b.records[firstFailed]?.seq)];
  if (named.join(",") !== expected.join(","))
    observer.violate(
      "I4",
      false,
      `w${w.id}: batch item failures ${named.join(",") || "none"}, expected ${expected.join(",") || "none"}`,
    );
  return firstFailed;
}

/**
 * I4 for `newestPerSubject`, where a subject's records run newest first: a record that ran and was not acknowledged
 * leaves every record of its subject with a lower position (or, with a record without a position, every later one)
 * deferred or malformed: none acknowledged without a newer commit behind it.
 */
function checkNewestFirst(run: RunningHistory, w: StreamWorker, b: StreamBatch, result: StreamResult): void {
  const rows = b.records.map((r, i) => {
    const e = run.events[r.event] as SimEvent;
    const statuses =
      result.report.deliveries.find((d) => d.recordIndex === i)?.events.map((x) => x.status) ?? [];
    return { r, i, e, statuses };
  });
  for (const failed of rows) {
    if (failed.statuses.every((s) => isAcknowledged(s) || s === "deferred")) continue;
    const same = rows.filter((x) => x !== failed && x.e.subject === failed.e.subject);
    const ordered = [failed, ...same].every((x) => x.e.position !== undefined);
    for (const x of same) {
      const behind = ordered
        ? comparePositions(x.e.position ?? "", failed.e.position ?? "") < 0
        : x.i > failed.i;
      if (behind && x.statuses.some((s) => s !== "deferred" && s !== "malformed"))
        run.observer.violate(
          "I4",
          false,
          `w${w.id}: record ${x.r.seq} ended ${x.statuses.join(",")} though a newer record of ${failed.e.subject} (${failed.r.seq}) failed`,
        );
    }
  }
}

/** A record as Lambda hands it to a Kinesis-triggered function: its data names the simulated event. */
function kinesisRecord(run: RunningHistory, r: StreamBatch["records"][number]): KinesisStreamRecord {
  const e = run.events[r.event] as SimEvent;
  const shardId = `shardId-${String(r.shard).padStart(12, "0")}`;
  return {
    awsRegion: "us-east-1",
    eventID: `${shardId}:${r.seq}`,
    eventName: "aws:kinesis:record",
    eventSource: "aws:kinesis",
    eventSourceARN: "arn:aws:kinesis:us-east-1:000000000000:stream/chaos",
    eventVersion: "1.0",
    invokeIdentityArn: "arn:aws:iam::000000000000:role/chaos",
    kinesis: {
      kinesisSchemaVersion: "1.0",
      partitionKey: e.subject,
      sequenceNumber: String(r.seq),
      data: Buffer.from(JSON.stringify({ event: r.event })).toString("base64"),
      approximateArrivalTimestamp: VIRTUAL_EPOCH_MS / 1000,
    },
  };
}

function describe(run: RunningHistory, event: number): string {
  const e = run.events[event] as SimEvent;
  return `${e.subject}/${e.identity}`;
}
