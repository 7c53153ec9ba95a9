import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { KeyTimeline, Scenario, ScenarioResult } from "../../src/cli/demo/scenario.js";
import { buildTimeline } from "../../src/cli/demo/timeline.js";
import type { TraceEvent } from "../../src/sim/live/trace.js";
import { localStateStore, quietObservability, sleep } from "../shared/demo-kit.js";
import { guardedImagesHandler, naiveImagesHandler, outputKey } from "./handler.js";
import { classify, type Picture, pictures } from "./pictures.js";

/** The AWS sample's numbers: 100 keys, cat then dog, batches of 10. Slow runs: 10 s there, 1.5 s here. */
const KEYS = 100;
const BATCH = 10;
const LEASE_MS = 1500;

export const imagesScenario: Scenario = {
  name: "images",
  title: "images — invert the newest picture (S3 → EventBridge → Lambda → S3)",
  description:
    "100 keys are uploaded as a cat picture and then overwritten by a dog picture, in batches of 10, as in " +
    "the AWS Storage Blog sample. The function reads the picture, inverts it (sharp) and writes out-<key>. " +
    "Faults: 30% of runs pause 1.5 s between reading and writing, a few crash there, EventBridge " +
    "delivers some events twice and late. Guard off, a slow cat run overwrites the dog's result. Guard on, " +
    "events are ordered by sequencer: the dog supersedes a slow cat, whose write the S3 fenced sink refuses " +
    "(a conditional PutObject: If-Match on the ETag, position and fence in the object's metadata), and a crashed " +
    "run holds its key only until its lease expires.",
  expectedRuns: (scale) => Math.round(KEYS * scale * 2 * 1.2),
  async run(ctx): Promise<ScenarioResult> {
    const { runtime } = ctx;
    const s3 = runtime.s3Client();
    const input = `${ctx.prefix}-in`;
    const output = `${ctx.prefix}-out`;
    await runtime.createBucket(input);
    await runtime.createBucket(output);
    const stateTable = `${ctx.prefix}-state`;
    const handler = ctx.guard
      ? guardedImagesHandler({
          s3,
          outputBucket: output,
          store: await localStateStore(ctx, stateTable),
          options: {
            ...quietObservability(),
            busy: "supersede",
            leaseMs: LEASE_MS,
            heartbeatMs: 500,
            waitIntervalMs: 50,
            maxWaitIntervalMs: 300,
            deadlineMarginMs: 500,
          },
        })
      : naiveImagesHandler({ s3, outputBucket: output });
    const fn = runtime.fn({
      name: `${ctx.functionPrefix}-images`,
      handler,
      timeoutMs: 4000,
      concurrency: 20,
      faults: { slowRate: 0.3, slowMs: 1500, crashRate: 0.04, failBeforeRate: 0.03 },
    });
    const unroute = runtime.notify(
      input,
      { via: "eventbridge", function: fn, asyncInvoke: { retryDelaysMs: [1000, 2000] } },
      { faults: { duplicateRate: 0.1, reorderWindowMs: 50 } },
    );
    // The output bucket's change log: every write of an output object, to count repeated effects.
    const writes = new Map<string, number>();
    const unwatch = runtime.s3!.onObjectEvent((r) => {
      if (r.s3.bucket.name === output && r.eventName.startsWith("ObjectCreated")) {
        writes.set(r.s3.object.key, (writes.get(r.s3.object.key) ?? 0) + 1);
      }
    });

    const keys = Array.from({ length: Math.max(2, Math.round(KEYS * ctx.scale)) }, (_, i) => `img${i}.png`);
    const { cat, dog } = await pictures();
    try {
      for (let b = 0; b < keys.length; b += BATCH) {
        const batch = keys.slice(b, b + BATCH);
        await Promise.all(batch.map((key) => put(key, cat)));
        // Roughly what the sample's script takes between the two uploads of a key.
        await sleep(250);
        await Promise.all(batch.map((key) => put(key, dog)));
        await sleep(150);
      }
      await runtime.idle();
    } finally {
      unroute();
      unwatch();
    }

    // Measured in the output bucket: what each key ended up holding, and how often it was written.
    const results = new Map<string, Picture | "missing">();
    const samples: { label: string; dataUri: string }[] = [];
    for (const key of keys) {
      const body = await get(outputKey(key));
      const picture = body ? await classify(body) : "missing";
      results.set(key, picture);
      if (body && samples.length < 6 && (picture !== "inverted-dog" || samples.length < 2)) {
        samples.push({
          label: `${outputKey(key)}: ${picture}`,
          dataUri: `data:image/png;base64,${body.toString("base64")}`,
        });
      }
    }
    const staleResults = [...results.values()].filter((p) => p === "inverted-cat").length;
    const lostEvents = [...results.values()].filter((p) => p === "missing" || p === "unknown").length;
    let duplicateEffects = 0;
    for (const key of keys) duplicateEffects += Math.max(0, (writes.get(outputKey(key)) ?? 0) - 2);

    const events = runtime.trace.events;
    const s3Events = events.filter(
      (e): e is Extract<TraceEvent, { type: "s3-event" }> =>
        e.type === "s3-event" && e.record.s3.bucket.name === input,
    );
    const crash = crashRecovery(events, fn.name);
    const timelines = pickTimelines(events, s3Events, input, keys, ctx.guard, results);
    const crashedRuns = events.filter(
      (e) => e.type === "run" && e.functionName === fn.name && e.status === "crashed",
    ).length;
    const notes = [
      `${keys.length} keys: ${count(results, "inverted-dog")} outputs show the inverted dog, ` +
        `${staleResults} the inverted cat (stale), ${lostEvents} are missing.`,
    ];
    if (ctx.guard && crash.crashed > 0) {
      notes.push(
        `${crash.crashed} run(s) crashed mid-processing while holding their key; ${crash.recovered} of those keys ` +
          `were claimed again by a later run (${crash.tookOver} taken over once the lease expired, the others ` +
          `superseded by the newer upload), at most ${crash.maxBlockedMs} ms after the crash ` +
          `(lease ${LEASE_MS} ms; Lambda retries 1 s after a failure).`,
      );
    }
    return {
      measured: { distinctEvents: s3Events.length, duplicateEffects, staleResults, lostEvents },
      details: {
        "output writes": [...writes.values()].reduce((a, b) => a + b, 0),
        "crashed runs": crashedRuns,
        ...(ctx.guard
          ? {
              "crashed while holding their key": crash.crashed,
              "keys recovered after a crash": crash.recovered,
              "longest block after a crash (ms)": crash.maxBlockedMs,
            }
          : {}),
        "slow runs": events.filter(
          (e) => e.type === "run" && e.functionName === fn.name && e.faults.slowMs > 0,
        ).length,
      },
      notes,
      timelines,
      samples,
    };

    async function put(key: string, body: Buffer) {
      await s3.send(new PutObjectCommand({ Bucket: input, Key: key, Body: body, ContentType: "image/png" }));
    }
    async function get(key: string): Promise<Buffer | undefined> {
      try {
        const out = await s3.send(new GetObjectCommand({ Bucket: output, Key: key }));
        return Buffer.from((await out.Body?.transformToByteArray()) ?? []);
      } catch {
        return undefined;
      }
    }
  },
};

function count(results: Map<string, string>, value: string): number {
  return [...results.values()].filter((v) => v === value).length;
}

/** Crashed runs of the guarded function, and when another run next claimed the key each held. */
function crashRecovery(events: readonly TraceEvent[], functionName: string) {
  const crashed = events.filter(
    (e): e is Extract<TraceEvent, { type: "run" }> =>
      e.type === "run" && e.functionName === functionName && e.status === "crashed",
  );
  const claims = events.filter(
    (e): e is Extract<TraceEvent, { type: "guard" }> =>
      e.type === "guard" && (e.step === "claimed" || e.step === "took-over" || e.step === "superseded"),
  );
  let recovered = 0;
  let tookOver = 0;
  let maxBlockedMs = 0;
  let holding = 0;
  for (const run of crashed) {
    const own = claims.find((c) => c.runId === run.runId);
    if (!own) continue; // crashed before claiming: held nothing
    // Superseded before it crashed: it no longer held the key.
    if (
      claims.some((c) => c.key === own.key && c.runId !== run.runId && c.atMs > own.atMs && c.atMs < run.atMs)
    ) {
      continue;
    }
    holding++;
    const next = claims.find((c) => c.key === own.key && c.runId !== run.runId && c.atMs >= run.atMs);
    if (!next) continue;
    recovered++;
    if (next.step === "took-over") tookOver++;
    maxBlockedMs = Math.max(maxBlockedMs, next.atMs - run.atMs);
  }
  return { crashed: holding, recovered, tookOver, maxBlockedMs };
}

/**
 * Keys worth a timeline. Guard off: a key that ended stale. Guard on: the key showing the most of the
 * ordering outcomes (superseded, stale, duplicate), and one whose holder crashed and was taken over.
 */
function pickTimelines(
  events: readonly TraceEvent[],
  s3Events: Extract<TraceEvent, { type: "s3-event" }>[],
  bucket: string,
  keys: string[],
  guarded: boolean,
  results: Map<string, Picture | "missing">,
): KeyTimeline[] {
  const candidates = keys.map((key) => {
    const mine = s3Events.filter(
      (e) => decodeURIComponent(e.record.s3.object.key.replace(/\+/g, " ")) === key,
    );
    const lanes = new Map(
      mine.map((e, i) => [e.record.responseElements["x-amz-request-id"], i === 0 ? "cat" : "dog"]),
    );
    const entries = buildTimeline(events, {
      lanes,
      originMs: mine[0]?.atMs ?? 0,
      ...(guarded ? { stateKey: `o#${bucket}/${key}` } : {}),
    });
    return { key, entries, kinds: new Set(entries.map((e) => e.outcome)) };
  });
  const best = (score: (c: (typeof candidates)[number]) => number) => {
    let top: (typeof candidates)[number] | undefined;
    let topScore = 0;
    for (const c of candidates) {
      const v = score(c);
      if (v > topScore) {
        top = c;
        topScore = v;
      }
    }
    return top;
  };
  const lanes = ["cat", "dog"];
  const out: KeyTimeline[] = [];
  if (!guarded) {
    const stale = best((c) => (results.get(c.key) === "inverted-cat" ? 1 + c.entries.length / 100 : 0));
    const any = stale ?? best((c) => c.kinds.size + c.entries.length / 100);
    if (any) {
      out.push({
        key: any.key,
        lanes,
        entries: any.entries,
        caption: stale
          ? "The cat's run finished after the dog's and overwrote its result: the output is the inverted cat."
          : "No key ended stale in this run.",
      });
    }
    return out;
  }
  const ordering = best(
    (c) =>
      Number(c.kinds.has("superseded")) * 3 +
      Number(c.kinds.has("stale")) * 2 +
      Number(c.kinds.has("duplicate")) +
      c.kinds.size / 10,
  );
  if (ordering) {
    out.push({
      key: ordering.key,
      lanes,
      entries: ordering.entries,
      caption:
        "Ordering by sequencer: a newer upload supersedes a slow older run, late or repeated deliveries are skipped.",
    });
  }
  const crash = best((c) => (c.kinds.has("crashed") && c.kinds.has("took-over") ? 1 + c.kinds.size / 10 : 0));
  if (crash && crash.key !== ordering?.key) {
    out.push({
      key: crash.key,
      lanes,
      entries: crash.entries,
      caption:
        "A run crashed holding the key; the next delivery waited for its lease to expire and took the key over.",
    });
  }
  return out;
}
