import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { inspectText, registerInspect } from "../src/cli/inspect.js";
import { type CliRun, runCli } from "./kit/cli.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const fixtures = join(root, "test/fixtures/events");
const main = join(root, "src/cli/main.ts");

type Line = Record<string, unknown>;

interface Case {
  file: string;
  args?: string[];
  options?: { messages?: "accept" | "reject"; correlationAttribute?: string };
  exitCode: 0 | 1 | 2;
  /** Expected lines, in order; each is matched with toMatchObject (a subset of the printed fields). */
  lines: Line[];
  stderr?: RegExp;
}

const REQ_ID_2 = "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD";
const HASH_IDENTITY = /^h:[A-Za-z0-9_-]{32}$/;

const cases: Case[] = [
  {
    file: "s3-put.json",
    exitCode: 0,
    lines: [
      {
        kind: "s3",
        envelope: "s3",
        recordIndex: 0,
        correlationId: "C3D13FE58DE4C810",
        bucket: "amzn-s3-demo-bucket",
        key: "HappyFace.jpg",
        versionId: "096fKKXTRTtl3on89fVO.nfljtsv6qko",
        operation: "created",
        eventName: "ObjectCreated:Put",
        sequencer: "0055AED6DCD90281E5",
        position: "0055AED6DCD90281E500000000000000",
        subject: "amzn-s3-demo-bucket/HappyFace.jpg",
        identity: "0055AED6DCD90281E500000000000000:created",
        size: 1024,
        etag: "d41d8cd98f00b204e9800998ecf8427e",
      },
    ],
  },
  {
    file: "s3-multi-record.json",
    exitCode: 0,
    lines: [
      {
        recordIndex: 0,
        key: "reports/2024/q1.csv",
        operation: "created",
        position: "0062E99A88DC40746000000000000000",
        correlationId: "REQ00000000000A1",
      },
      {
        recordIndex: 1,
        key: "reports/2024/q1.csv",
        operation: "removed",
        eventName: "ObjectRemoved:DeleteMarkerCreated",
        versionId: "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF",
        sequencer: "0062E99A88DC407461F",
        position: "0062E99A88DC407461F0000000000000",
        size: null,
        etag: null,
        correlationId: "REQ00000000000A2",
      },
      {
        recordIndex: 2,
        key: "images/cat.png",
        versionId: null,
        operation: "created",
        position: "0062E99A88DC4074AA00000000000000",
        correlationId: "REQ00000000000A3",
      },
    ],
  },
  {
    file: "s3-encoded-keys.json",
    exitCode: 0,
    lines: [
      {
        key: "photos/2024/red flower+ünïcødé 100%.jpg",
        subject: "amzn-s3-demo-bucket/photos/2024/red flower+ünïcødé 100%.jpg",
        position: "0066321A0B1C2D3E4000000000000000",
        correlationId: "ENC0000000000000",
      },
      { key: "dt=2024-01-01/日本語 ファイル (1) ~draft.txt", correlationId: "ENC0000000000001" },
      { key: "emoji/😀 smile & more?#.png", correlationId: "ENC0000000000002" },
    ],
  },
  {
    file: "s3-delete.json",
    exitCode: 0,
    lines: [
      {
        envelope: "s3",
        key: "old/report.pdf",
        operation: "removed",
        eventName: "ObjectRemoved:Delete",
        versionId: null,
        size: null,
        etag: null,
        position: "0055AED6DCD90281E600000000000000",
        identity: "0055AED6DCD90281E600000000000000:removed",
        correlationId: "DEL0000000000001",
      },
    ],
  },
  {
    file: "s3-test-event.json",
    exitCode: 0,
    lines: [
      {
        kind: "s3-test",
        envelope: "s3",
        bucket: "amzn-s3-demo-bucket",
        requestId: "5582815E1AEA5ADF",
        correlationId: "5582815E1AEA5ADF",
        eventTime: "2014-10-13T15:57:02.089Z",
      },
    ],
  },
  {
    file: "s3-lifecycle-transition.json",
    exitCode: 0,
    lines: [
      {
        key: "archive/2019/log.gz",
        eventName: "LifecycleTransition",
        operation: "other",
        sequencer: null,
        position: null,
        identity: expect.stringMatching(HASH_IDENTITY),
        correlationId: "20EB74C14654DC47",
      },
    ],
  },
  {
    file: "sqs-s3.json",
    exitCode: 0,
    lines: [
      {
        envelope: "sqs-s3",
        recordIndex: 0,
        key: "uploads/a.txt",
        position: "00661A2B3C4D5E6F7000000000000000",
        correlationId: "SQSREQ0000000001",
        sqsMessageId: "059f36b4-87a3-44ab-83d2-661975830a7d",
      },
      // One SQS message whose body carries two S3 records: one unit, two events.
      { envelope: "sqs-s3", recordIndex: 1, key: "uploads/b.txt", correlationId: "SQSREQ0000000002" },
      { envelope: "sqs-s3", recordIndex: 1, key: "uploads/c d.txt", requestId: "SQSREQ0000000003" },
    ],
  },
  {
    file: "sqs-s3-test-event.json",
    exitCode: 0,
    lines: [
      {
        kind: "s3-test",
        envelope: "sqs-s3",
        bucket: "amzn-s3-demo-bucket",
        correlationId: "5582815E1AEA5ADF",
        sqsMessageId: "c80e8021-a70a-42c7-a470-796e1186f753",
      },
    ],
  },
  {
    file: "sqs-sns-s3.json",
    exitCode: 0,
    lines: [
      {
        envelope: "sns-sqs-s3",
        key: "inbox/Quarterly Report (final).pdf",
        operation: "created",
        position: "0066A0B1C2D3E4F50000000000000000",
        correlationId: "SNSREQ0000000001",
      },
    ],
  },
  {
    file: "sqs-sns-raw-s3.json",
    exitCode: 0,
    lines: [{ envelope: "sqs-s3", key: "raw/delivery.json", correlationId: "RAWREQ0000000001" }],
  },
  {
    file: "eventbridge-object-created.json",
    exitCode: 0,
    lines: [
      {
        envelope: "eventbridge",
        bucket: "amzn-s3-demo-bucket1",
        key: "example-key",
        versionId: "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
        operation: "created",
        eventName: "Object Created",
        sequencer: "617f08299329d189",
        position: "617F08299329D1890000000000000000",
        identity: "617F08299329D1890000000000000000:created",
        correlationId: "N4N7GDK58NMKJ12R",
        size: 5,
      },
    ],
  },
  {
    file: "eventbridge-object-deleted.json",
    exitCode: 0,
    lines: [
      {
        envelope: "eventbridge",
        operation: "removed",
        eventName: "Object Deleted",
        position: "617F0837B476E4630000000000000000",
        size: null,
        correlationId: "0BH729840619AG5K",
      },
    ],
  },
  {
    file: "eventbridge-object-restore-completed.json",
    exitCode: 0,
    lines: [
      {
        envelope: "eventbridge",
        operation: "other",
        eventName: "Object Restore Completed",
        sequencer: null,
        position: null,
        identity: expect.stringMatching(HASH_IDENTITY),
        correlationId: "189F19CB7FB1B6A4",
      },
    ],
  },
  {
    file: "eventbridge-object-tags-added.json",
    exitCode: 0,
    lines: [
      {
        operation: "other",
        eventName: "Object Tags Added",
        position: null,
        identity: expect.stringMatching(HASH_IDENTITY),
        correlationId: "TAG0000000000001",
      },
    ],
  },
  {
    file: "eventbridge-storage-class-changed.json",
    exitCode: 0,
    lines: [
      {
        key: "archive/2019/log.gz",
        operation: "other",
        eventName: "Object Storage Class Changed",
        position: null,
        correlationId: "SCC0000000000001",
      },
    ],
  },
  {
    // EventBridge keys are not form-encoded: `+` and `%2B` stay as they are.
    file: "eventbridge-special-key.json",
    exitCode: 0,
    lines: [
      {
        key: "reports/a+b 100%2B ü:1.csv",
        subject: "amzn-s3-demo-bucket1/reports/a+b 100%2B ü:1.csv",
        position: "0066B0C1D2E3F4000100000000000000",
        correlationId: "EBKEY00000000001",
      },
    ],
  },
  {
    file: "sqs-eventbridge.json",
    exitCode: 0,
    lines: [
      {
        envelope: "sqs-eventbridge",
        key: "raw/health-check/2023-08-08T14:03:40.532432.zip",
        operation: "created",
        position: "0064D3901D0005924200000000000000",
        correlationId: "XRRTKJXSZQCWNQR1",
        sqsMessageId: "7d1c3b2a-9e8f-4d6c-b5a4-3f2e1d0c9b8a",
        size: 198524144,
      },
    ],
  },
  {
    file: "sqs-message.json",
    args: ["--messages", "accept"],
    options: { messages: "accept" },
    exitCode: 0,
    lines: [
      {
        kind: "message",
        envelope: "sqs",
        messageId: "11d6ee51-4cc7-4302-9e22-7cd8afdaadf5",
        correlationId: "11d6ee51-4cc7-4302-9e22-7cd8afdaadf5",
        body: '{"orderId": "order-42", "version": 7, "status": "paid"}',
      },
    ],
  },
  {
    file: "sqs-message.json",
    args: ["--messages", "accept", "--correlation-attribute", "traceId"],
    options: { messages: "accept", correlationAttribute: "traceId" },
    exitCode: 0,
    lines: [
      { kind: "message", messageId: "11d6ee51-4cc7-4302-9e22-7cd8afdaadf5", correlationId: "trace-abc-123" },
    ],
  },
  {
    // Default: application messages are rejected, as a unit error (exit 1), not a crash.
    file: "sqs-message.json",
    exitCode: 1,
    lines: [
      {
        error: expect.stringMatching(/not an S3 notification.*messages: "accept"/),
        path: "Records[0].body",
        envelope: "sqs",
        recordIndex: 0,
        correlationId: "11d6ee51-4cc7-4302-9e22-7cd8afdaadf5",
      },
    ],
  },
  {
    file: "malformed-sqs-bad-json-body.json",
    exitCode: 1,
    lines: [
      { envelope: "sqs-s3", recordIndex: 0, key: "ok/first.txt", correlationId: "GOOD000000000001" },
      {
        error: expect.stringMatching(/body is not valid JSON/),
        type: "MalformedEventError",
        path: "Records[1].body",
        envelope: "sqs",
        recordIndex: 1,
        correlationId: "a0000000-0000-4000-8000-000000000002",
      },
      { envelope: "sqs-s3", recordIndex: 2, key: "ok/third.txt", correlationId: "GOOD000000000003" },
    ],
  },
  {
    file: "malformed-s3-missing-key.json",
    exitCode: 1,
    lines: [
      { recordIndex: 0, key: "ok/fine.txt", correlationId: "FINE000000000001" },
      {
        error: "missing (at Records[1].s3.object.key)",
        path: "Records[1].s3.object.key",
        envelope: "s3",
        recordIndex: 1,
        correlationId: "MISSKEY000000001",
      },
    ],
  },
  {
    file: "malformed-s3-bad-sequencer.json",
    exitCode: 1,
    lines: [
      {
        error: expect.stringMatching(/invalid S3 sequencer "0055AED6DCD9028XYZ": not hexadecimal/),
        type: "InvalidSequencerError",
        path: "Records[0].s3.object.sequencer",
        envelope: "s3",
        correlationId: "BADSEQ0000000001",
      },
    ],
  },
  {
    file: "malformed-sqs-bad-key-escape.json",
    exitCode: 1,
    lines: [
      {
        error: expect.stringMatching(/invalid percent escape "%ZZ"/),
        path: "Records[0].body.Records[0].s3.object.key",
        envelope: "sqs-s3",
        correlationId: "b0000000-0000-4000-8000-000000000001",
      },
    ],
  },
  {
    file: "kinesis-batch.json",
    exitCode: 0,
    lines: [
      {
        kind: "kinesis",
        envelope: "kinesis",
        recordIndex: 0,
        correlationId: "shardId-000000000006:49590338271490256608559692538361571095921575989136588898",
        streamName: "lambda-stream",
        shardId: "shardId-000000000006",
        partitionKey: "1",
        sequenceNumber: "49590338271490256608559692538361571095921575989136588898",
        position: "05649590338271490256608559692538361571095921575989136588898",
        dataBytes: 22,
        json: false,
      },
      {
        kind: "kinesis",
        recordIndex: 1,
        sequenceNumber: "49590338271490256608559692540925702759324208523137515618",
        position: "05649590338271490256608559692540925702759324208523137515618",
      },
    ],
  },
  {
    file: "kinesis-json.json",
    exitCode: 0,
    lines: [
      { kind: "kinesis", partitionKey: "o-1", json: true },
      { kind: "kinesis", partitionKey: "o-2", json: false, dataBytes: 3 },
    ],
  },
  {
    file: "malformed-kinesis-tumbling-window.json",
    exitCode: 2,
    lines: [],
    stderr: /tumbling windows are not supported/,
  },
  {
    file: "dynamodb-insert-modify-remove.json",
    exitCode: 0,
    lines: [
      {
        kind: "dynamodb",
        envelope: "dynamodb-streams",
        correlationId: "c4ca4238a0b923820dcc509a6f75849b",
        eventName: "INSERT",
        tableName: "ExampleTableWithStream",
        item: 'ExampleTableWithStream/{"Id":{"N":"101"}}',
        sequenceNumber: "4421584500000000017450439091",
        position: "0284421584500000000017450439091",
        viewType: "NEW_AND_OLD_IMAGES",
        ttlExpired: false,
      },
      { eventName: "MODIFY", position: "0284421584500000000017450439092" },
      { eventName: "REMOVE", position: "0284421584500000000017450439093", ttlExpired: false },
    ],
  },
  {
    file: "dynamodb-ttl-remove.json",
    exitCode: 0,
    lines: [
      {
        eventName: "REMOVE",
        ttlExpired: true,
        item: 'ExampleTableWithStream/{"pk":{"S":"session#42"},"sk":{"N":"7"}}',
      },
    ],
  },
  {
    file: "dynamodb-keys-only.json",
    exitCode: 0,
    lines: [
      { viewType: "KEYS_ONLY", item: 'ExampleTableWithStream/{"pk":{"S":"user#1"},"sk":{"S":"2024-01-01"}}' },
    ],
  },
  { file: "dynamodb-new-image.json", exitCode: 0, lines: [{ viewType: "NEW_IMAGE", eventName: "INSERT" }] },
  { file: "dynamodb-old-image.json", exitCode: 0, lines: [{ viewType: "OLD_IMAGE", eventName: "MODIFY" }] },
  {
    file: "malformed-unknown-shape.json",
    exitCode: 2,
    lines: [],
    stderr: /^eonce inspect: unknown invocation shape/,
  },
];

function parseLines(lines: string[]): Line[] {
  return lines.map((l) => JSON.parse(l) as Line);
}

describe("fixtures", () => {
  it("every fixture has at least one case", () => {
    const covered = new Set(cases.map((c) => c.file));
    const files = readdirSync(fixtures).filter((f) => f.endsWith(".json"));
    expect(files.filter((f) => !covered.has(f))).toEqual([]);
    expect(files.length).toBeGreaterThanOrEqual(20);
  });
});

describe("inspectText", () => {
  for (const c of cases) {
    it(`${c.file} ${c.args?.join(" ") ?? ""}`, () => {
      const result = inspectText(readFileSync(join(fixtures, c.file), "utf8"), c.options);
      expect(result.exitCode).toBe(c.exitCode);
      const lines = parseLines(result.lines);
      // On arrays, toMatchObject checks the length and matches each line against its expected subset.
      expect(lines).toMatchObject(c.lines);
      if (c.stderr) expect(result.stderr).toMatch(c.stderr);
      else expect(result.stderr).toBeUndefined();
    });
  }

  it("prints a stable schema: absent S3 fields are null, not missing", () => {
    const [line] = parseLines(inspectText(readFileSync(join(fixtures, "s3-delete.json"), "utf8")).lines);
    expect(Object.keys(line as Line).sort()).toEqual(
      [
        "bucket",
        "correlationId",
        "envelope",
        "etag",
        "eventName",
        "eventTime",
        "identity",
        "key",
        "kind",
        "operation",
        "position",
        "recordIndex",
        "requestId",
        "sequencer",
        "size",
        "subject",
        "versionId",
      ].sort(),
    );
  });

  it("orders the delete marker after the put of the same key by position", () => {
    const lines = parseLines(inspectText(readFileSync(join(fixtures, "s3-multi-record.json"), "utf8")).lines);
    const [put, del] = lines as [Line, Line];
    expect(put.subject).toBe(del.subject);
    expect((put.position as string) < (del.position as string)).toBe(true);
  });

  it("exits 2 with a one-line reason for text that is not JSON", () => {
    const result = inspectText("{ nope");
    expect(result).toMatchObject({ lines: [], exitCode: 2 });
    expect(result.stderr).toMatch(/^eonce inspect: input is not JSON: /);
    expect(result.stderr).not.toContain("\n");
  });

  it("reports JSON errors on one line even when the parser quotes a newline", () => {
    const result = inspectText('{"a":\n x');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^eonce inspect: input is not JSON: /);
    expect(result.stderr).not.toMatch(/[\n\r]/);
  });

  it("reads a file that begins with a UTF-8 byte order mark", () => {
    const text = readFileSync(join(fixtures, "s3-put.json"), "utf8");
    expect(inspectText(`\uFEFF${text}`)).toEqual(inspectText(text));
    expect(inspectText(`\uFEFF${text}`).exitCode).toBe(0);
  });

  it("reports a deeply nested sequencer as a malformed unit (exit 1), not a crash", () => {
    const result = inspectText(deepSequencerEvent());
    expect(result.exitCode).toBe(1);
    expect(parseLines(result.lines)).toMatchObject([
      { type: "InvalidSequencerError", path: "Records[0].s3.object.sequencer", recordIndex: 0 },
    ]);
  });

  it("exits 2 for JSON that is not an object", () => {
    expect(inspectText("[1,2]")).toMatchObject({ exitCode: 2, stderr: expect.stringMatching(/an array/) });
  });

  it("exits 2 for invalid options", () => {
    const result = inspectText("{}", { messages: "maybe" as "accept" });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/messages must be one of accept, reject/);
  });

  it("does not confuse the x-amz-id-2 host id with the request id", () => {
    const text = readFileSync(join(fixtures, "s3-put.json"), "utf8");
    expect(text).toContain(REQ_ID_2);
    expect(inspectText(text).lines.join("\n")).not.toContain(REQ_ID_2);
  });
});

/** A direct S3 notification whose sequencer is nested 100,000 levels deep (past JSON.stringify's limit). */
function deepSequencerEvent(): string {
  const text = readFileSync(join(fixtures, "s3-put.json"), "utf8");
  const depth = 100_000;
  return text.replace('"0055AED6DCD90281E5"', `${"[".repeat(depth)}1${"]".repeat(depth)}`);
}

const run = promisify(execFile);

/** `eonce inspect` in this process: the command's own code (file reading, output, exit code), without a spawn. */
const inProcess = (args: string[]): Promise<CliRun> => runCli(registerInspect, ["inspect", ...args]);

/** The real executable under tsx, for what only a process has: stdin, argv parsing errors, the exit status. */
async function cli(
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const child = run(process.execPath, ["--import", "tsx", main, ...args], { cwd: root, encoding: "utf8" });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  try {
    const { stdout, stderr } = await child;
    return { stdout, stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout: string; stderr: string; code: number };
    return { stdout: err.stdout, stderr: err.stderr, code: err.code };
  }
}

describe("eonce inspect <file> (the command in-process)", () => {
  for (const c of cases) {
    it(`${c.file} ${c.args?.join(" ") ?? ""}`, async () => {
      const { stdout, stderr, code } = await inProcess([join(fixtures, c.file), ...(c.args ?? [])]);
      expect(code).toBe(c.exitCode);
      const lines = parseLines(stdout.split("\n").filter((l) => l.length > 0));
      // On arrays, toMatchObject checks the length and matches each line against its expected subset.
      expect(lines).toMatchObject(c.lines);
      if (c.stderr) expect(stderr.trim()).toMatch(c.stderr);
    });
  }

  it("exits 2 with one line on stderr for a missing file", async () => {
    const { stdout, stderr, code } = await inProcess([join(fixtures, "does-not-exist.json")]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/^eonce inspect: cannot read .*does-not-exist\.json: .*ENOENT/);
  });
});

describe("eonce inspect (spawned)", () => {
  // Spawning tsx takes about a second: run the cases side by side.
  it.concurrent("prints the same lines as inspectText and exits 1 when a unit is malformed", async () => {
    const file = join(fixtures, "sqs-message.json");
    const { stdout, code } = await cli(["inspect", file]);
    const expected = inspectText(readFileSync(file, "utf8"));
    expect(expected.exitCode).toBe(1);
    expect(code).toBe(1);
    expect(stdout).toBe(`${expected.lines.join("\n")}\n`);
  });

  it.concurrent("reads stdin with -", async () => {
    const input = readFileSync(join(fixtures, "sqs-sns-s3.json"), "utf8");
    const { stdout, code } = await cli(["inspect", "-"], input);
    expect(code).toBe(0);
    expect(JSON.parse(stdout.trim())).toMatchObject({
      envelope: "sns-sqs-s3",
      key: "inbox/Quarterly Report (final).pdf",
    });
  });

  it.concurrent("prints a malformed line, not a stack trace, for deeply nested input", async () => {
    const { stdout, stderr, code } = await cli(["inspect", "-"], deepSequencerEvent());
    expect(code).toBe(1);
    expect(stderr).toBe("");
    expect(JSON.parse(stdout.trim())).toMatchObject({ type: "InvalidSequencerError" });
  });

  it.concurrent("exits 2 for stdin that is not JSON", async () => {
    const { stderr, code } = await cli(["inspect", "-"], "hello");
    expect(code).toBe(2);
    expect(stderr).toMatch(/^eonce inspect: input is not JSON/);
  });

  it.concurrent("exits 2 on a usage error (unknown --messages mode)", async () => {
    const { stderr, code } = await cli(["inspect", "-", "--messages", "maybe"], "{}");
    expect(code).toBe(2);
    expect(stderr).toMatch(/maybe/);
  });

  it.concurrent("starts with a node shebang so npm can link it as the eonce bin", async () => {
    expect(readFileSync(main, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  });
});
