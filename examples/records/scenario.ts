import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { Scenario, ScenarioResult } from "../../src/cli/demo/scenario.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { createPrng } from "../../src/sim/prng.js";
import { countBy, forEachLimited, localStateStore, quietObservability, scanAll } from "../shared/demo-kit.js";
import { guardedRecordsHandler, naiveRecordsHandler } from "./handler.js";

/** Demo sizes at scale 1: 80 files, 20 of them uploaded again later (legitimately): 100 uploads. */
const FILES = 80;
const REUPLOADS = 20;

export const recordsScenario: Scenario = {
  name: "records",
  foldsIntoDynamoDB: true,
  title: "records — one DynamoDB row per upload (S3 → Lambda → DynamoDB)",
  description:
    "Files are uploaded (some of them twice, on purpose); S3 invokes the function directly, which writes one " +
    "row per upload. Faults: S3 sends some notifications twice, some runs fail after writing the row " +
    "(so Lambda retries them), some fail before, a few outlive the 3 s timeout and finish as zombies. " +
    "Guard off, the naive put writes a row per run. Guard on, the row is written in the guard's commit " +
    "transaction, deduplicated by the upload's sequencer (not ordered: an older upload is still a row).",
  expectedRuns: (scale) => Math.round((FILES + REUPLOADS) * scale * 1.4),
  async run(ctx): Promise<ScenarioResult> {
    const { runtime } = ctx;
    const ddb = runtime.dynamodbClient();
    const bucket = `${ctx.prefix}-uploads`;
    const table = `${ctx.prefix}-records`;
    await runtime.createBucket(bucket);
    await createTableIfMissing(ddb, table, "id");
    const config = { dynamodb: ddb, recordsTable: table };
    const handler = ctx.guard
      ? guardedRecordsHandler({
          ...config,
          store: await localStateStore(ctx, `${ctx.prefix}-state`),
          options: { leaseMs: 2000, waitIntervalMs: 50, maxWaitIntervalMs: 400, ...quietObservability() },
        })
      : naiveRecordsHandler(config);
    const fn = runtime.fn({
      name: `${ctx.functionPrefix}-records`,
      handler,
      timeoutMs: 3000,
      concurrency: 10,
      faults: { failBeforeRate: 0.05, failAfterRate: 0.15, slowRate: 0.05, slowMs: 3500 },
    });
    const unroute = runtime.notify(
      bucket,
      { via: "direct", function: fn, asyncInvoke: { retryDelaysMs: [1000, 2000] } },
      { faults: { duplicateRate: 0.2, reorderWindowMs: 300 } },
    );

    const files = Math.max(2, Math.round(FILES * ctx.scale));
    const reuploads = Math.max(1, Math.round(REUPLOADS * ctx.scale));
    const prng = createPrng(ctx.seed).fork("records-uploads");
    const uploads = Array.from({ length: files }, (_, i) => i);
    for (let i = 0; i < reuploads; i++) uploads.push(prng.int(0, files - 1));
    const s3 = runtime.s3Client();
    try {
      await forEachLimited(uploads, 4, async (n, i) => {
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            // A space and a plus: notification keys arrive form-URL-encoded (`invoice+7%2Bcopy.txt`).
            Key: `uploads/invoice ${n}+copy.txt`,
            Body: `invoice ${n}, upload ${i}\n`,
          }),
        );
      });
      await runtime.idle();
    } finally {
      unroute();
    }

    // Counted in the bucket's notifications (what S3 accepted) and the table (what was written).
    const uploadsSeen = runtime.trace.events.flatMap((e) =>
      e.type === "s3-event" && e.record.s3.bucket.name === bucket ? [e.record.s3.object.sequencer] : [],
    );
    const rows = await scanAll(ddb, table);
    const rowsPerUpload = countBy(rows, (r) => String(r.sequencer));
    let duplicateEffects = 0;
    for (const n of rowsPerUpload.values()) duplicateEffects += n - 1;
    const lostEvents = uploadsSeen.filter((s) => !rowsPerUpload.has(s)).length;
    const runs = runtime.trace.events.filter((e) => e.type === "run" && e.functionName === fn.name);
    const status = countBy(runs, (r) => (r.type === "run" ? r.status : ""));
    return {
      measured: { distinctEvents: uploadsSeen.length, duplicateEffects, staleResults: 0, lostEvents },
      details: {
        uploads: uploadsSeen.length,
        rows: rows.length,
        "failed runs": status.get("failed") ?? 0,
        "timed-out runs (zombies)": status.get("timed-out") ?? 0,
      },
      notes: [
        `${uploadsSeen.length} uploads (${reuploads} of them re-uploads of an existing file) → ${rows.length} rows.`,
      ],
    };
  },
};
