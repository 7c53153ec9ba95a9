#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import cliProgress from "cli-progress";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import {
  ENGINE_MODES,
  ENGINE_NAMES,
  type EngineName,
  INLINE_ENGINE_NAMES,
  inlineAlias,
  isEngineName,
  SERVER_ENGINE_NAMES,
} from "../engines/registry.js";
import type { OutboxBreak } from "../sim/broken.js";
import {
  BROKEN_OUTBOX,
  BROKEN_ROW_KEYS,
  BROKEN_STEPS,
  BROKEN_STORES,
  BROKEN_STREAMS,
  BROKEN_WRITE_CHECKS,
} from "../sim/broken.js";
import { type CampaignSummary, replay, runCampaign } from "../sim/campaign.js";
import { EXHAUSTIVE_CASES, explore, replayPath } from "../sim/exhaustive.js";
import { BROKEN_KEYS } from "../sim/hostile-keys.js";
import { INVARIANTS, type Violation } from "../sim/observer.js";

interface ChaosOptions {
  histories: number;
  seed: number;
  /** The engine, in its inline mode with `inline` (a deprecated `<engine>-inline` name: resolved by `selected`). */
  engine: EngineName;
  /** @deprecated `--store`: `--engine`'s old name. */
  store?: EngineName;
  inline?: boolean;
  json?: boolean;
  replay?: number;
  replayPath?: string;
  exhaustive?: boolean;
  break?: string;
  unfencedSink?: boolean;
  dynamodbEndpoint?: string;
  concurrency?: number;
  failover?: boolean;
  waitForReplicas?: boolean;
  durable?: boolean;
  wrappers?: boolean;
  streams?: boolean;
  outbox?: boolean;
}

/**
 * `eonce chaos` / `npm run chaos`: the fault simulator (src/sim). Seeded histories of workers running the guard
 * on virtual time under injected faults, checked against the invariants; any violation comes with the command that
 * replays it. Exits 1 when there are violations.
 */
export function registerChaos(program: Command): void {
  const command = program
    .command("chaos")
    .description("run the guard through seeded fault-injected histories and check its invariants")
    .option("--histories <n>", "how many seeded histories", integer, 1000)
    .option("--seed <n>", "seed of the first history (history i has seed + i)", integer, 1);
  addEngineOptions(command)
    .option("--json", "print the summary as JSON")
    .option("--replay <seed>", "run only the history with this seed and print its trace", integer)
    .option("--exhaustive", "also explore every interleaving of the small cases (memory)")
    .option("--replay-path <case:choices>", "replay one exhaustive history (as printed for its violations)")
    .option("--break <name>", breakHelp())
    .option(
      "--unfenced-sink",
      "use a sink that ignores positions and fences (memory; to see the checks fire)",
    )
    .option(
      "--failover",
      `${enginesWith((e) => e.serverFaults.includes("failover"))}: each history's server fails over once to a replica that lacks the last acknowledged writes`,
    )
    .option("--wait-for-replicas", "with --failover: the store WAITs for the replica after each step")
    .option(
      "--durable",
      `durable histories: the dispatcher, executions replayed in any order, crashing steps, repeated step names, stop (${enginesWith((e) => e.durable)})`,
    )
    .option(
      "--wrappers",
      "deliver through the Lambda SQS wrapper (batches, FIFO groups, run and apply, handler failures) instead of calling the guard",
    )
    .option(
      "--streams",
      "deliver through the Lambda Kinesis wrapper from a stream (shards, splits, checkpoints, retries from the failed record, bisect, lost checkpoints, producer retries) instead of calling the guard",
    )
    .option(
      "--outbox",
      "handlers publish at commit (ctx.publish) to the engine's outbox; relay copies racing under faults send to a standard or FIFO queue; a consumer guarded by message id downstream (checks O1-O5)",
    )
    .option("--dynamodb-endpoint <url>", "use this running DynamoDB Local instead of starting one")
    .option(
      "--concurrency <n>",
      `histories on a server engine (${SERVER_ENGINE_NAMES.join(", ")}) in parallel (default 12)`,
      integer,
    )
    .action(async (options: ChaosOptions) => {
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
      try {
        process.exitCode = await chaos(selected(options));
      } catch (error) {
        process.stderr.write(`eonce chaos: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = 2;
      }
    });
}

/** `--engine` (`--store`, its old name) and `--inline`: the engine and its mode (read together by `selected`). */
function addEngineOptions(command: Command): Command {
  return command
    .option(
      "--engine <name>",
      `${ENGINE_NAMES.join(", ")} (src/engines/registry.ts); ${SERVER_ENGINE_NAMES.join(", ")} run on a server: their own, or their test server's URL (docs/store-authors.md)`,
      engineName,
      "memory",
    )
    .option(
      "--inline",
      `the engine's inline mode: the state in the user's rows (${INLINE_ENGINE_NAMES.join(", ")})`,
    )
    .addOption(new Option("--store <name>", "deprecated: --engine").argParser(engineName));
}

/** The help of `--break`: every broken part the simulator has, by the mode it needs. */
function breakHelp(): string {
  return `wrap the store in a deliberately broken one: ${Object.keys(BROKEN_STORES).join(", ")}; or, on the inline stores, map rows with a broken mapping: ${Object.keys(BROKEN_ROW_KEYS).join(", ")}; or, with --durable, key steps otherwise: ${Object.keys(BROKEN_STEPS).join(", ")}; or, with --streams, move checkpoints otherwise: ${Object.keys(BROKEN_STREAMS).join(", ")}; or, with --outbox, relay or publish otherwise: ${Object.keys(BROKEN_OUTBOX).join(", ")}; or encode keys lossily: ${Object.keys(BROKEN_KEYS).join(", ")}; or, on an engine whose writes meet foreign values, weaken the pre-write check: ${Object.keys(BROKEN_WRITE_CHECKS).join(", ")}`;
}

/** The engines (`--inline`: in their inline mode) `has` holds for, for the help. */
function enginesWith(has: (e: (typeof ENGINE_MODES)[number]) => boolean): string {
  return [...new Set(ENGINE_MODES.filter(has).map((e) => `${e.name}${e.inline ? " --inline" : ""}`))].join(
    ", ",
  );
}

/**
 * The engine and mode asked for: `--engine` (or its old name `--store`) and `--inline`; a deprecated
 * `<engine>-inline` name is the engine with `--inline`.
 */
function selected(o: ChaosOptions): ChaosOptions {
  const name = o.store ?? o.engine;
  const alias = inlineAlias(name);
  const chosen = { ...o, engine: alias ?? name, inline: alias !== undefined || o.inline === true };
  delete chosen.store;
  if (chosen.inline && !INLINE_ENGINE_NAMES.includes(chosen.engine))
    throw new Error(
      `--inline: the ${chosen.engine} engine has no inline mode (${INLINE_ENGINE_NAMES.join(", ")})`,
    );
  return chosen;
}

/** `--engine memory`, `--engine dynamodb --inline`: the flags that select the run's engine and mode. */
function engineFlags(o: ChaosOptions): string {
  return `--engine ${o.engine}${o.inline ? " --inline" : ""}`;
}

function common(o: ChaosOptions) {
  const broken = o.break ? BROKEN_STORES[o.break] : undefined;
  const rows = o.break ? BROKEN_ROW_KEYS[o.break] : undefined;
  const steps = o.break ? BROKEN_STEPS[o.break] : undefined;
  const streams = o.break ? BROKEN_STREAMS[o.break] : undefined;
  const checks = o.break ? BROKEN_WRITE_CHECKS[o.break] : undefined;
  const keys = o.break ? BROKEN_KEYS[o.break] : undefined;
  const outbox = o.break && Object.hasOwn(BROKEN_OUTBOX, o.break) ? (o.break as OutboxBreak) : undefined;
  if (o.break && !broken && !rows && !steps && !checks && !keys && !streams && !outbox)
    throw new Error(`unknown --break ${o.break}`);
  if (outbox && !o.outbox) throw new Error(`--break ${o.break} needs --outbox`);
  if (o.outbox && (o.durable || o.wrappers || o.streams))
    throw new Error("--outbox is a kind of history of its own: not with --durable, --wrappers or --streams");
  if (steps && !o.durable) throw new Error(`--break ${o.break} needs --durable`);
  if (streams && !o.streams) throw new Error(`--break ${o.break} needs --streams`);
  if (rows && !o.inline)
    throw new Error(`--break ${o.break} needs --inline (--engine ${INLINE_ENGINE_NAMES.join(" or ")})`);
  return {
    engine: o.engine,
    inline: o.inline === true,
    ...(o.dynamodbEndpoint ? { endpoint: o.dynamodbEndpoint } : {}),
    ...(broken ? { wrapStore: broken.wrap } : {}),
    ...(rows ? { rowKey: rows.rowKey } : {}),
    ...(checks ? { brokenWriteCheck: true } : {}),
    ...(keys ? { lossyKeys: true } : {}),
    ...(o.unfencedSink ? { unfencedSink: true } : {}),
    ...(o.failover ? { failover: { waitForReplicas: o.waitForReplicas === true } } : {}),
    ...(o.durable ? { durable: true } : {}),
    ...(steps ? { nameKeyedSteps: true } : {}),
    ...(o.wrappers ? { wrappers: true } : {}),
    ...(o.streams ? { streams: true } : {}),
    ...(streams ? { checkpointPastFailures: true } : {}),
    ...(o.outbox ? { outbox: true } : {}),
    ...(outbox ? { outboxBreak: outbox } : {}),
  };
}

/** The command line that replays one history of this run. */
function replayCommand(o: ChaosOptions, seed: number): string {
  const extra = [
    o.engine !== "memory" || o.inline ? engineFlags(o) : "",
    o.durable ? "--durable" : "",
    o.break ? `--break ${o.break}` : "",
    o.unfencedSink ? "--unfenced-sink" : "",
    o.failover ? "--failover" : "",
    o.failover && o.waitForReplicas ? "--wait-for-replicas" : "",
    o.wrappers ? "--wrappers" : "",
    o.streams ? "--streams" : "",
    o.outbox ? "--outbox" : "",
  ].filter(Boolean);
  return ["npm run chaos -- --replay", String(seed), ...extra].join(" ");
}

async function chaos(o: ChaosOptions): Promise<number> {
  if (o.unfencedSink && o.engine !== "memory") throw new Error("--unfenced-sink needs --engine memory");
  if (o.waitForReplicas && !o.failover) throw new Error("--wait-for-replicas needs --failover");
  if (o.replayPath !== undefined) return replayExhaustive(o.replayPath);
  if (o.replay !== undefined) return replayHistory(o, o.replay);
  const stop = stopOnSignal();
  let summary: CampaignSummary;
  try {
    summary = await campaign(o, stop.signal);
  } finally {
    stop.dispose();
  }
  const interrupted = stop.received();
  const exhaustive = o.exhaustive && !interrupted ? await exhaustiveCases(o) : undefined;
  const report: Report = {
    summary,
    exhaustive: exhaustive?.cases ?? [],
    states: summary.states + (exhaustive?.cases ?? []).reduce((n, e) => n + e.states, 0),
    violations: summary.violations + (exhaustive?.cases ?? []).reduce((n, e) => n + e.violations, 0),
    replays: [...summary.failures.map((f) => replayCommand(o, f.seed)), ...(exhaustive?.replays ?? [])],
  };
  process.stdout.write(`${o.json ? jsonReport(o, report) : textReport(o, report).join("\n")}\n`);
  if (interrupted) {
    process.stderr.write(`eonce chaos: interrupted (${interrupted}) after ${summary.histories} histories\n`);
    return SIGNAL_EXIT[interrupted] ?? 2;
  }
  return report.violations > 0 ? 1 : 0;
}

function violationLines(violations: readonly Violation[]): string {
  return violations.map((v) => `VIOLATION ${v.invariant} at ${v.atMs}ms: ${v.message}`).join("\n");
}

/** `--replay-path case:choices`: one exhaustive history with its trace. */
async function replayExhaustive(path: string): Promise<number> {
  const [index, choices = ""] = path.split(":");
  const c = EXHAUSTIVE_CASES[Number(index)];
  if (!c) throw new Error(`no exhaustive case ${index}`);
  const r = await replayPath(c, choices.split(",").filter(Boolean).map(Number));
  process.stdout.write(`exhaustive case ${index}: ${c.name}\n${(r.trace ?? []).join("\n")}\n`);
  process.stdout.write(`${violationLines(r.violations) || "no violations"}\n`);
  return r.violations.length > 0 ? 1 : 0;
}

/** `--replay seed`: one seeded history with its trace. */
async function replayHistory(o: ChaosOptions, seed: number): Promise<number> {
  const r = await replay(seed, common(o));
  if (o.json) {
    const { config, violations, beyondSkew, trace } = r;
    process.stdout.write(`${JSON.stringify({ seed: r.seed, config, violations, beyondSkew, trace })}\n`);
    return violations.length > 0 ? 1 : 0;
  }
  process.stdout.write(`history ${r.seed} (${engineFlags(o)}): ${JSON.stringify(r.config)}\n`);
  process.stdout.write(`${(r.trace ?? []).join("\n")}\n`);
  process.stdout.write(
    r.violations.length === 0
      ? `no violations${r.beyondSkew && r.allViolations.length > 0 ? ` (${r.allViolations.length} beyond the clock-skew bound, not reported)` : ""}\n`
      : `${violationLines(r.violations)}\n`,
  );
  if (r.knownIssues.length > 0) process.stdout.write(`known issue pattern: ${r.knownIssues.join(", ")}\n`);
  return r.violations.length > 0 ? 1 : 0;
}

async function campaign(o: ChaosOptions, signal: AbortSignal): Promise<CampaignSummary> {
  const bar = progress(o.histories);
  try {
    return await runCampaign({
      ...common(o),
      histories: o.histories,
      seed: o.seed,
      ...(o.concurrency ? { concurrency: o.concurrency } : {}),
      onProgress: (done) => bar.update(done),
      signal,
    });
  } finally {
    bar.stop();
  }
}

/** The exit code of a run ended by a signal, as a shell reports it. */
const SIGNAL_EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Ctrl-C or SIGTERM during a campaign: no history starts after it, the running ones finish and the run removes what it
 * made on its engine (runCampaign's environment), then reports what it ran. A second signal ends the process at once;
 * a PostgreSQL schema left so is swept by the next run (src/engines/postgres/sim-schema.ts).
 */
function stopOnSignal(): { signal: AbortSignal; received(): NodeJS.Signals | undefined; dispose(): void } {
  const stop = new AbortController();
  let received: NodeJS.Signals | undefined;
  const on = (name: NodeJS.Signals) => {
    if (received) process.exit(SIGNAL_EXIT[received]);
    received = name;
    process.stderr.write(
      `\neonce chaos: ${name}: finishing the running histories, then removing the run's data\n`,
    );
    stop.abort();
  };
  const names = Object.keys(SIGNAL_EXIT) as NodeJS.Signals[];
  for (const n of names) process.on(n, on);
  return {
    signal: stop.signal,
    received: () => received,
    dispose: () => {
      for (const n of names) process.off(n, on);
    },
  };
}

interface ExhaustiveLine {
  name: string;
  states: number;
  complete: boolean;
  violations: number;
}

/** `--exhaustive`: every case in full, with the commands that replay its first failures. */
async function exhaustiveCases(o: ChaosOptions): Promise<{ cases: ExhaustiveLine[]; replays: string[] }> {
  const broken = o.break ? BROKEN_STORES[o.break] : undefined;
  const cases: ExhaustiveLine[] = [];
  const replays: string[] = [];
  for (const [i, c] of EXHAUSTIVE_CASES.entries()) {
    const r = await explore(c, broken ? { wrapStore: broken.wrap } : {});
    cases.push({ name: c.name, states: r.states, complete: r.complete, violations: r.violations });
    for (const f of r.failures.slice(0, 5))
      replays.push(`npm run chaos -- --replay-path ${i}:${f.path.join(",")}`);
  }
  return { cases, replays };
}

/** A run's figures: the campaign's, and the exhaustive cases' added in. */
interface Report {
  summary: CampaignSummary;
  exhaustive: ExhaustiveLine[];
  states: number;
  violations: number;
  replays: string[];
}

function jsonReport(o: ChaosOptions, r: Report): string {
  const s = r.summary;
  return JSON.stringify({
    histories: s.histories,
    violations: r.violations,
    states: r.states,
    faults: s.faults,
    engine: o.engine,
    ...(o.inline ? { inline: true } : {}),
    ...(o.wrappers ? { wrappers: true } : {}),
    ...(o.streams ? { streams: true } : {}),
    ...(o.outbox ? { outbox: true } : {}),
    ...(o.failover ? { failover: { waitForReplicas: o.waitForReplicas === true } } : {}),
    seed: o.seed,
    beyondSkew: s.beyondSkew,
    beyondSkewUnreported: s.beyondSkewUnreported,
    byInvariant: s.byInvariant,
    knownIssues: s.knownIssues,
    unexplained: s.unexplained,
    ...(o.exhaustive ? { exhaustive: r.exhaustive } : {}),
    wallMs: s.wallMs,
    replays: r.replays,
  });
}

function textReport(o: ChaosOptions, r: Report): string[] {
  const s = r.summary;
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  return [
    `${s.histories} ${o.wrappers ? "wrapper " : o.streams ? "stream " : o.outbox ? "outbox " : ""}histories on ${o.engine}${o.inline ? " (inline)" : ""}${o.failover ? ` with a failover${o.waitForReplicas ? " (waitForReplicas)" : ""}` : ""} (seeds ${o.seed}..${o.seed + s.histories - 1}), ${s.states} distinct, in ${(s.wallMs / 1000).toFixed(1)}s`,
    `faults: ${list(s.faults)}`,
    `clocks beyond the skew bound: ${s.beyondSkew} histories (${s.beyondSkewUnreported} violations there not reported: the guarantee does not hold)`,
    ...r.exhaustive.map(
      (e) =>
        `exhaustive: ${e.name}: ${e.states} histories${e.complete ? "" : " (cut)"}, ${e.violations} with violations`,
    ),
    r.violations === 0
      ? "no violations"
      : `${r.violations} histories with violations: ${Object.entries(s.byInvariant)
          .map(([k, v]) => `${k} ${v}× (${INVARIANTS[k as keyof typeof INVARIANTS]})`)
          .join("; ")}`,
    ...(Object.keys(s.knownIssues).length > 0
      ? [`known issues: ${list(s.knownIssues)}; unexplained: ${s.unexplained}`]
      : []),
    ...s.failures
      .slice(0, 10)
      .map(
        (f) =>
          `  ${f.violations[0]?.invariant}: ${f.violations[0]?.message}\n    replay: ${replayCommand(o, f.seed)}`,
      ),
  ];
}

function progress(total: number): { update(done: number): void; stop(): void } {
  const stream = process.stderr;
  if (!stream.isTTY || total < 200) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { stream, format: "chaos {bar} {value}/{total} histories", hideCursor: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return { update: (d) => bar.update(d), stop: () => bar.stop() };
}

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError("expected a non-negative integer");
  return n;
}

/**
 * An engine's name (src/engines/registry.ts); the deprecated `<engine>-inline` names, and `inline` (the
 * simulator's old name of `dynamodb-inline`), still work: `selected` reads them as the engine with `--inline`.
 */
function engineName(value: string): EngineName {
  const name = value === "inline" ? "dynamodb-inline" : value;
  if (!isEngineName(name) && inlineAlias(name) === undefined)
    throw new InvalidArgumentError(`expected ${ENGINE_NAMES.join(", ")}`);
  return name;
}

// Run directly (`tsx src/cli/chaos.ts`, the `chaos` npm script): the same command without the `eonce` prefix.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // Named so that help reads "Usage: npm run chaos [options]", the command a user types (options after `--`).
  const program = new Command("npm run").exitOverride();
  registerChaos(program);
  try {
    await program.parseAsync(["node", "npm run", "chaos", ...process.argv.slice(2)]);
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    process.exitCode = e.exitCode === 0 ? 0 : 2;
  }
}
