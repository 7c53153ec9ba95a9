import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { pictures } from "../../examples/images/pictures.js";
import type { RunReport } from "../../src/cli/run/run-handler.js";
import { type DynamoDBLocal, startDynamoDBLocal } from "../../src/local/emulators/dynamodb-local.js";
import { scanTable } from "../../src/local/emulators/scan-table.js";
import { POSTGRES_URL, testDatabase } from "../kit/postgres.js";
import { eonce } from "./cli-helpers.js";

const suffix = () => randomUUID().slice(0, 8);
const endpoint = () => ["--dynamodb-endpoint", inject("dynamodbEndpoint")];
const parse = (stdout: string): RunReport =>
  JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as RunReport;

// Side by side: each test spawns its own `eonce run` (its own servers and tables).
describe.concurrent("eonce run", () => {
  it("runs the records example's Lambda handler with faults: every invariant holds", async () => {
    const t = suffix();
    const { code, stdout, stderr } = await eonce([
      "run",
      "examples/records/lambda.ts:handler",
      "--generate",
      "20",
      "--reupload",
      "4",
      "--table",
      `records-${t}:id`,
      "--env",
      `RECORDS_TABLE=records-${t}`,
      "--env",
      "LEASE_MS=2000",
      "--state-table",
      `state-${t}`,
      "--effects",
      `records-${t}:sequencer`,
      "--duplicate-rate",
      "0.4",
      "--fail-after-rate",
      "0.3",
      "--seed",
      "2",
      "--json",
      ...endpoint(),
    ]);
    expect(stderr).not.toMatch(/Error:/);
    const report = parse(stdout);
    expect(report).toMatchObject({ source: "direct", uploads: 24, events: 24 });
    // Every upload with its sequencer, in the order S3 accepted them (the guard's order per key).
    expect(report.uploaded).toHaveLength(24);
    const sequencers = report.uploaded.map((u) => u.sequencer);
    expect([...sequencers].sort()).toEqual(sequencers);
    expect(new Set(sequencers).size).toBe(24);
    expect(report.uploaded[0]?.key).toMatch(/^generated\/object \d+\+v\.txt$/);
    expect(report.deliveries).toBeGreaterThan(24);
    expect(report.outcomes.duplicate).toBeGreaterThan(0);
    expect(report.invariants.map((c) => [c.id, c.status])).toEqual([
      ["I1", "pass"],
      ["I2", "pass"],
      ["I3", "pass"],
      ["I4", "pass"],
    ]);
    expect(code).toBe(0);
  }, 240_000);

  it("runs the images example's handler behind EventBridge and checks the final positions (I2)", async () => {
    const t = suffix();
    const folder = await mkdtemp(join(tmpdir(), "eonce-pictures-"));
    const { cat, dog } = await pictures();
    for (let i = 0; i < 4; i++) await writeFile(join(folder, `pet ${i}.png`), i % 2 ? cat : dog);
    const { code, stdout } = await eonce([
      "run",
      "examples/images/lambda.ts:handler",
      "--source",
      "eventbridge",
      "--from",
      folder,
      "--reupload",
      "6",
      "--state-table",
      `img-state-${t}`,
      "--output-bucket",
      `img-out-${t}`,
      "--env",
      "LEASE_MS=2000",
      "--duplicate-rate",
      "0.3",
      "--json",
      ...endpoint(),
    ]);
    await rm(folder, { recursive: true, force: true });
    const report = parse(stdout);
    expect(report.uploads).toBe(10);
    const i2 = report.invariants.find((c) => c.id === "I2");
    expect(i2?.status).toBe("pass");
    expect(i2?.detail).toMatch(/ordered subjects, each committed at its newest event/);
    expect(code).toBe(0);
  }, 240_000);

  it("catches the naive handler's duplicate rows (I1 fails, exit code 1)", async () => {
    const t = suffix();
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/naive-records.ts:handler",
      "--generate",
      "12",
      "--table",
      `naive-${t}:id`,
      "--env",
      `RECORDS_TABLE=naive-${t}`,
      "--effects",
      `naive-${t}:sequencer`,
      "--duplicate-rate",
      "0.5",
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    const i1 = report.invariants.find((c) => c.id === "I1");
    expect(i1?.status).toBe("fail");
    expect(i1?.detail).toMatch(/more than one row/);
    expect(code).toBe(1);
  }, 240_000);
});

/** Where one engine keeps the fixture's state: `eonce run`'s flags for it, the environment it runs in. */
interface EngineState {
  flags: string[];
  env?: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

const ENGINES: { kind: string; setup(t: string): Promise<EngineState> }[] = [
  {
    kind: "dynamodb",
    setup: async (t) => ({ flags: ["--state-table", `eng-state-${t}`], close: async () => {} }),
  },
  {
    kind: "dynamodb-inline",
    setup: async (t) => ({
      flags: ["--state-store", "dynamodb", "--inline", "--state-table", `eng-rows-${t}`],
      close: async () => {},
    }),
  },
  {
    kind: "postgres",
    async setup() {
      const db = await testDatabase("run_state");
      return {
        flags: ["--state-store", "postgres", "--database-url", POSTGRES_URL, "--schema", db.schema],
        close: () => db.close(),
      };
    },
  },
  {
    // The connection from DATABASE_URL, as the README's handlers read it: no --database-url.
    kind: "postgres-inline",
    async setup() {
      const db = await testDatabase("run_rows");
      return {
        flags: ["--state-store", "postgres", "--inline", "--schema", db.schema, "--state-table", "photos"],
        env: { DATABASE_URL: POSTGRES_URL },
        close: () => db.close(),
      };
    },
  },
  {
    kind: "sqlite",
    async setup() {
      const dir = await mkdtemp(join(tmpdir(), "eonce-run-sqlite-"));
      return {
        flags: ["--state-store", "sqlite", "--state-file", join(dir, "state.db")],
        close: () => rm(dir, { recursive: true, force: true }),
      };
    },
  },
];

/** `eonce run` of test/local/fixtures/state-engines.ts on `kind`: 8 uploads, 4 of them uploaded again. */
async function runOnEngine(kind: string, extra: string[]) {
  const state = await (ENGINES.find((e) => e.kind === kind) as (typeof ENGINES)[number]).setup(suffix());
  try {
    const args = [
      "run",
      "test/local/fixtures/state-engines.ts:handler",
      "--generate",
      "8",
      "--reupload",
      "4",
    ];
    const fixture = ["--env", `FIXTURE_STORE=${kind}`, "--env", "LEASE_MS=1000"];
    const run = await eonce(
      [...args, ...fixture, ...state.flags, ...extra, "--json", ...endpoint()],
      240_000,
      state.env,
    );
    if (!run.stdout.trim())
      throw new Error(`eonce run wrote no report (exit ${run.code}): ${run.stderr.trim()}`);
    const report = parse(run.stdout);
    const check = (id: string) => report.invariants.find((c) => c.id === id);
    return { ...run, report, check };
  } finally {
    await state.close();
  }
}

// Side by side, as above. Each engine's state is read through its StateAdmin (src/cli/run/state.ts).
describe.concurrent("eonce run checks I1–I4 on every engine", () => {
  it.each(ENGINES.map((e) => e.kind))(
    "%s: under faults every invariant is checked and holds",
    async (kind) => {
      const faults = ["--duplicate-rate", "0.4", "--fail-after-rate", "0.2", "--reorder-window-ms", "100"];
      const { code, stderr, report, check } = await runOnEngine(kind, [...faults, "--crash-rate", "0.1"]);
      expect(
        report.invariants.map((c) => [c.id, c.status]),
        stderr,
      ).toEqual([
        ["I1", "pass"],
        ["I2", "pass"],
        ["I3", "pass"],
        ["I4", "pass"],
      ]);
      expect(check("I2")?.detail).toMatch(
        new RegExp(`^8 ordered subjects, each committed at its newest event .* in ${kind} `),
      );
      expect(check("I3")?.detail).toMatch(new RegExp(`^8 state records, none still claimed in ${kind} `));
      expect(report.outcomes.duplicate).toBeGreaterThan(0);
      expect(code).toBe(0);
    },
    240_000,
  );

  it.each(ENGINES.map((e) => e.kind))(
    "%s: a hand-rolled dedupe that skips every subject seen before fails I2 (re-uploads acknowledged, never committed)",
    async (kind) => {
      const { code, stderr, check } = await runOnEngine(kind, ["--env", "FIXTURE_BROKEN=skip-seen"]);
      expect(check("I2")?.status, stderr).toBe("fail");
      expect(check("I2")?.detail).toMatch(
        /^\d subject\(s\) whose committed position is older than their newest event \(eonce-input\/generated\//,
      );
      expect(check("I3")?.status).toBe("pass");
      expect(check("I4")?.status).toBe("pass");
      expect(code).toBe(1);
    },
    240_000,
  );
});

/**
 * A DynamoDB Local started by hand, without `-sharedDb`, keeps one database per access key and region: the runtime
 * (which creates the tables) and the handler must use the same key pair and region.
 */
// Concurrent, as every suite of this file: consecutive concurrent suites run side by side (vitest's maxConcurrency
// bounds the runs at once), so no suite waits for the slowest run of the one before it.
describe.concurrent("eonce run --dynamodb-endpoint on a DynamoDB Local without -sharedDb", () => {
  let ddb: DynamoDBLocal;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "eonce-unshared-"));
    ddb = await startDynamoDBLocal({ sharedDb: false, startTimeoutMs: 90_000 });
  }, 120_000);
  afterAll(async () => {
    await ddb?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const run = async (t: string, extra: string[] = []) => {
    const file = join(dir, `messages-${t}.jsonl`);
    await writeFile(file, `${["a", "b", "c"].map((id) => JSON.stringify({ body: { id } })).join("\n")}\n`);
    return eonce([
      "run",
      "test/local/fixtures/messages-handler.ts:handler",
      "--source",
      "sqs",
      "--messages",
      file,
      "--table",
      `msg-${t}`,
      "--env",
      `MESSAGES_TABLE=msg-${t}`,
      "--state-table",
      `msg-state-${t}`,
      "--json",
      "--dynamodb-endpoint",
      ddb.endpoint,
      ...extra,
    ]);
  };

  it("the handler writes to the tables the runtime created: the run succeeds", async () => {
    const t = suffix();
    const { code, stdout, stderr } = await run(t);
    expect(stderr).not.toMatch(/ResourceNotFoundException|Error:/);
    const report = parse(stdout);
    expect(report).toMatchObject({ messages: 3, events: 3 });
    expect(report.outcomes.processed).toBe(3);
    expect(report.unsuccessful.total).toBe(0);
    // The runtime's own client (the key pair it created the tables with) reads what the handler wrote.
    const rows = await scanTable(ddb.client(), `msg-${t}`);
    expect(rows.map((r) => r.id).sort()).toEqual(["a", "b", "c"]);
    expect(code).toBe(0);
  }, 180_000);

  it("a handler given other credentials (--env) would see another database: one line, exit 2", async () => {
    const { code, stdout, stderr } = await run(suffix(), ["--env", "AWS_ACCESS_KEY_ID=someoneElse"]);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(
      new RegExp(`^eonce run: the DynamoDB at ${ddb.endpoint} keeps one database per access key and region`),
    );
    expect(stderr).toContain("-sharedDb");
    expect(code).toBe(2);
  }, 120_000);
});

/**
 * A crashed Lambda leaves its claim `running` until the lease runs out, and so does `eonce run` when it ends (the
 * default, `--crashed-claims keep`): the state outlives the run (a SQLite file here), and operators practise on it
 * with `eonce state`. Every first attempt crashes at the fault point holding the claim; with a 10-minute lease, the
 * retries find it held and give up.
 */
describe.concurrent("eonce run and a crashed holder's claim", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "eonce-crashed-"));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const crashOnce = async (file: string, extra: string[] = []) => {
    const run = await eonce([
      "run",
      "test/local/fixtures/state-engines.ts:handler",
      "--generate",
      "1",
      "--env",
      "FIXTURE_STORE=sqlite",
      "--env",
      "LEASE_MS=600000",
      "--state-store",
      "sqlite",
      "--state-file",
      file,
      "--crash-rate",
      "1",
      "--json",
      ...endpoint(),
      ...extra,
    ]);
    const report = parse(run.stdout);
    expect(report.runs.crashed, run.stderr).toBe(1);
    expect(report.unsuccessful.lost).toBe(1);
    expect(run.code).toBe(1);
  };
  type Listed = { key: string; status: string; lease: string; fence: number };
  const state = async (file: string, ...args: string[]) => {
    const r = await eonce(["state", ...args, "--store", "sqlite", "--file", file, "--json"]);
    return JSON.parse(r.stdout.trim() || "{}") as Listed & { records?: Listed[]; released?: boolean };
  };

  it("keeps it by default: running, lease live, after the run; eonce state release frees it", async () => {
    const file = join(dir, "keep.db");
    await crashOnce(file);
    const [claim, ...others] = (await state(file, "list")).records ?? [];
    expect(others).toEqual([]);
    expect(claim).toMatchObject({ status: "running", lease: "live" });
    await state(file, "release", claim?.key ?? "", "--fence", String(claim?.fence));
    expect(await state(file, "get", claim?.key ?? "")).toMatchObject({
      status: "released",
      fence: claim?.fence,
    });
  }, 240_000);

  it("--crashed-claims release: the crashed code unwinds when the run ends, and the guard releases it", async () => {
    const file = join(dir, "release.db");
    await crashOnce(file, ["--crashed-claims", "release"]);
    const [claim] = (await state(file, "list")).records ?? [];
    expect(claim).toMatchObject({ status: "released" });
  }, 240_000);
});

describe.concurrent("eonce run --versions, --keep", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "eonce-versions-"));
    // Three rounds, in natural order (10 after 2): a.txt three versions with their own bytes, b.txt one.
    for (const [round, files] of [
      ["1", { "a.txt": "a one", "b.txt": "b one" }],
      ["2", { "a.txt": "a two" }],
      ["10", { "a.txt": "a ten" }],
    ] as const) {
      await mkdir(join(dir, round), { recursive: true });
      for (const [name, text] of Object.entries(files)) await writeFile(join(dir, round, name), text);
    }
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("uploads each version folder in order with its own content, and keeps the servers until interrupted", async () => {
    let s3Endpoint: string | undefined;
    let listed: Promise<string> | undefined;
    const t = suffix();
    const args = ["run", "examples/records/lambda.ts:handler", "--versions", dir, "--keep", "--json"];
    const tables = [
      "--table",
      `records-${t}:id`,
      "--env",
      `RECORDS_TABLE=records-${t}`,
      "--state-table",
      `state-${t}`,
    ];
    const { code, stdout, stderr } = await eonce(
      [...args, ...tables, ...endpoint()],
      240_000,
      {},
      (child, err) => {
        const m = /AWS_ENDPOINT_URL_S3=(\S+)/.exec(err);
        if (!m || s3Endpoint) return;
        s3Endpoint = m[1] as string;
        // The run is over and its report printed; the kept S3 still answers with what the run left.
        listed = fetch(`${s3Endpoint}/eonce-input?list-type=2`)
          .then((r) => r.text())
          .finally(() => child.kill("SIGINT"));
      },
    );
    const report = parse(stdout);
    expect(report.uploaded.map((u) => u.key)).toEqual(["a.txt", "b.txt", "a.txt", "a.txt"]);
    const etags = report.uploaded.filter((u) => u.key === "a.txt").map((u) => u.etag);
    expect(new Set(etags).size).toBe(3);
    expect(stderr).toMatch(/--keep: the servers stay up until Ctrl-C/);
    expect(await listed).toMatch(/<Key>a\.txt<\/Key>/);
    expect(code).not.toBeNull();
  }, 240_000);
});
