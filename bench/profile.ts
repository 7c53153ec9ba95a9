/**
 * Where one implementation's throughput goes: one throughput run next to a raw conditional-write run, with
 * CPU per event for this process and for DynamoDB Local, a V8 CPU profile of this process (SDK client,
 * guard, harness) and, where the JDK's `jcmd`/`jfr` are on the PATH, a JFR recording of DynamoDB Local.
 *
 *   tsx bench/profile.ts [--impl ours] [--workers 16] [--events 10000] [--dir /tmp/bench-profile]
 *
 * Writes <dir>/client.cpuprofile (open in Chrome DevTools) and <dir>/server.jfr, and prints both broken
 * down by component.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { Command } from "commander";
import { startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { createBenchClient } from "./client.js";
import { cpuMeter, findJavaByPort } from "./cpu.js";
import { IMPLEMENTATIONS } from "./harness.js";
import type { Implementation } from "./impls/types.js";
import { round } from "./stats.js";
import { timedRun } from "./timed-run.js";

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
}
interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const program = new Command()
  .option("--impl <name>", `one of ${Object.keys(IMPLEMENTATIONS).join(", ")}`, "ours")
  .option("--workers <n>", "concurrent workers", "16")
  .option("--events <n>", "distinct keys", "10000")
  .option("--dir <dir>", "where the profiles go", "/tmp/bench-profile")
  .parse();
const opts = program.opts<{ impl: string; workers: string; events: string; dir: string }>();
const impl = (IMPLEMENTATIONS as Record<string, Implementation>)[opts.impl];
if (!impl) throw new Error(`unknown implementation ${opts.impl}`);
const workers = Number(opts.workers);
const events = Number(opts.events);
mkdirSync(opts.dir, { recursive: true });
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const local = await startDynamoDBLocal();
const bc = createBenchClient(local.endpoint, workers * 2, (t) => t.endsWith("-out"));
const serverPid = findJavaByPort(String(local.port));
try {
  let n = 0;
  const cpu = cpuMeter(local.endpoint);
  const once = async (which: Implementation, count: number, tag: string) => {
    const prefix = `prof-${++n}-${which.name}`;
    const run = await timedRun(which, { client: bc.client, cpu, workers, count, tag, prefix });
    return {
      eps: Math.round(count / (run.elapsedMs / 1000)),
      clientMs: run.clientMs,
      serverMs: run.serverMs,
    };
  };
  // Warm both JITs on every request type first.
  await once(impl, 1000, "warm");
  await once(IMPLEMENTATIONS.rawWrite, 1000, "warm-raw");
  const raw = await once(IMPLEMENTATIONS.rawWrite, events, "raw");

  const jfrFile = join(opts.dir, "server.jfr");
  // Deep enough stacks to see which operation an expression-parser frame belongs to (the default is 64).
  if (serverPid) tryExec("jcmd", [String(serverPid), "JFR.configure", "stackdepth=512"]);
  const jfr = serverPid
    ? tryExec("jcmd", [String(serverPid), "JFR.start", "name=bench", "settings=profile"])
    : undefined;
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  const measured = await once(impl, events, "run");
  const { profile } = (await session.post("Profiler.stop")) as { profile: CpuProfile };
  session.disconnect();
  if (jfr !== undefined && serverPid) {
    tryExec("jcmd", [String(serverPid), "JFR.stop", "name=bench", `filename=${jfrFile}`]);
  }
  writeFileSync(join(opts.dir, "client.cpuprofile"), JSON.stringify(profile));

  const perEvent = (r: typeof raw) => ({
    clientMs: round(r.clientMs / events, 3),
    serverMs: r.serverMs === undefined ? undefined : round(r.serverMs / events, 3),
  });
  console.log(`\n${impl.name} × ${workers} workers, ${events} distinct keys`);
  console.log(`  raw conditional PutItem: ${raw.eps} events/s, CPU ms/event`, perEvent(raw));
  console.log(
    `  ${impl.name}: ${measured.eps} events/s (${round((100 * measured.eps) / raw.eps, 1)}% of raw), CPU ms/event`,
    perEvent(measured),
  );
  console.log("\nclient (this process), self time by component:");
  printTop(clientBreakdown(profile), 12);
  if (jfr !== undefined) {
    const server = serverBreakdown(jfrFile);
    if (server) {
      console.log(`\nDynamoDB Local (JFR, ${server.samples} samples), by operation (inclusive):`);
      printTop(server.byOperation, 12);
      console.log("by component (innermost match):");
      printTop(server.byComponent, 12);
    }
  } else {
    console.log("\n(no jcmd on the PATH: no server profile)");
  }
  console.log(`\nprofiles in ${opts.dir}`);
} finally {
  bc.destroy();
  await local.stop();
}

function printTop(rows: [string, number][], n: number): void {
  for (const [k, v] of rows.slice(0, n)) console.log(`  ${v.toFixed(1).padStart(5)}%  ${k}`);
  const rest = rows.slice(n).reduce((a, [, v]) => a + v, 0);
  if (rest > 0) console.log(`  ${rest.toFixed(1).padStart(5)}%  (${rows.length - n} more)`);
}

function tryExec(cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", maxBuffer: 1 << 30 });
  } catch {
    return undefined;
  }
}

/** Self time per component, from the V8 profile's samples. */
function clientBreakdown(profile: CpuProfile): [string, number][] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    if (!node) return;
    const { url, functionName } = node.callFrame;
    const component =
      functionName === "(idle)"
        ? "(idle: waiting for DynamoDB Local)"
        : functionName === "(garbage collector)"
          ? "garbage collector"
          : functionName === "(program)"
            ? "V8 / native (program)"
            : /@smithy|@aws-sdk/.test(url)
              ? "AWS SDK v3 (serialize, sign, middleware, parse)"
              : /@aws-lambda-powertools/.test(url)
                ? "Powertools"
                : /\/src\//.test(url)
                  ? "effectively-once (src/)"
                  : /\/bench\//.test(url)
                    ? "benchmark harness"
                    : url.startsWith("node:")
                      ? `Node core (${url.replace(/^node:(internal\/)?/, "").split("/")[0]})`
                      : url
                        ? "other dependencies"
                        : `native: ${functionName || "(anonymous)"}`;
    totals.set(component, (totals.get(component) ?? 0) + dt);
    all += dt;
  });
  return [...totals.entries()]
    .map(([k, v]) => [k, (100 * v) / all] as [string, number])
    .sort((a, b) => b[1] - a[1]);
}

/** DynamoDB Local's samples by operation and by component, from `jfr print`. */
function serverBreakdown(file: string) {
  // The default prints 5 frames per stack: too few to see which operation a parser frame belongs to.
  const text = tryExec("jfr", ["print", "--stack-depth", "128", "--events", "jdk.ExecutionSample", file]);
  if (!text) return undefined;
  const samples = text.split("jdk.ExecutionSample").slice(1);
  const operations: [RegExp, string][] = [
    [/TransactWriteItemsFunction/, "TransactWriteItems"],
    [/UpdateItemFunction/, "UpdateItem"],
    [/PutItemFunction/, "PutItem"],
    [/GetItemFunction/, "GetItem"],
    [/DeleteItemFunction/, "DeleteItem"],
  ];
  const components: [RegExp, string][] = [
    [/sqlite4java|SQLiteDBAccess/, "SQLite storage"],
    [
      /antlr|grammar|DynamoDbParser|ExpressionValidator|ExpressionExecutor|ASTListener/,
      "expression parsing and evaluation",
    ],
    [/jackson/, "JSON (de)serialization"],
    [/jetty/, "HTTP server (Jetty)"],
    [/InputConverter|LocalDBInputConverter|Validator|validate/, "request validation"],
    [/Lock|lock/, "locks"],
  ];
  const byOperation = new Map<string, number>();
  const byComponent = new Map<string, number>();
  for (const s of samples) {
    const frames = [...s.matchAll(/^\s+([\w.$<>]+)\(/gm)].map((m) => m[1] ?? "");
    const op =
      operations.find(([re]) => frames.some((f) => re.test(f)))?.[1] ?? "other (HTTP, idle threads, GC)";
    byOperation.set(op, (byOperation.get(op) ?? 0) + 1);
    let component = "other";
    for (const f of frames) {
      const hit = components.find(([re]) => re.test(f));
      if (hit) {
        component = hit[1];
        break;
      }
    }
    byComponent.set(component, (byComponent.get(component) ?? 0) + 1);
  }
  const pct = (m: Map<string, number>) =>
    [...m.entries()]
      .map(([k, v]) => [k, (100 * v) / samples.length] as [string, number])
      .sort((a, b) => b[1] - a[1]);
  return { samples: samples.length, byOperation: pct(byOperation), byComponent: pct(byComponent) };
}
