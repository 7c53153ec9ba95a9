/**
 * The Lambda wrapper's own CPU per event, without I/O: the bare guard and `s3Handler` in the same mode on the
 * in-memory store (logger SILENT, metrics disabled, as the bench's wrapper rows), interleaved in chunks so that load
 * drift hits both alike. What the wrapper adds on the loopback is this difference (plus the SDK client's work, the
 * same for both). With `--profile <file>`, then a V8 CPU profile of the wrapper alone over as many more events.
 *
 *   tsx bench/wrapper-cpu.ts [--mode apply] [--events 20000] [--chunk 500] [--profile /tmp/wrapper.cpuprofile]
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { Command } from "commander";
import { createGuard } from "../src/core/guard.js";
import { MemoryStore } from "../src/engines/memory/store.js";
import { type ApplyEventHandler, s3Handler } from "../src/lambda/index.js";
import { lambdaContext } from "../test/kit/context.js";
import { makeEvent } from "./events.js";
import { quietObservability } from "./impls/inline.js";
import { round } from "./stats.js";

const opts = new Command()
  .option("--mode <mode>", "apply or run", "apply")
  .option("--events <n>", "measured events per side", "20000")
  .option("--chunk <n>", "events per interleaved chunk", "500")
  .option("--profile <file>", "write a V8 CPU profile of the wrapper's chunks")
  .parse()
  .opts<{ mode: string; events: string; chunk: string; profile?: string }>();
if (opts.mode !== "apply" && opts.mode !== "run") throw new Error("--mode: apply or run");
const mode = opts.mode;
const total = Number(opts.events);
const chunk = Number(opts.chunk);

const bareStore = new MemoryStore();
const guard = createGuard({ store: bareStore });
const bare = async (i: number) => {
  const e = events[i % events.length];
  if (!e) return;
  const ev = { subject: `${e.subject}-${i}`, identity: `${e.identity}-${i}`, position: e.position };
  if (mode === "apply") await guard.apply(ev, () => "done");
  else await guard.run(ev, async () => "done");
};

const compute: ApplyEventHandler = () => "done";
const quiet = quietObservability();
const wrapped =
  mode === "apply"
    ? s3Handler(compute, { store: new MemoryStore(), mode: "apply", ...quiet })
    : s3Handler(async () => "done", { store: new MemoryStore(), ...quiet });
const wrapper = async (i: number) => {
  const e = events[i % events.length];
  if (!e) return;
  await wrapped({ Records: [e.record] }, lambdaContext());
};

// Distinct keys throughout (a repeated key would be a duplicate: a shorter path).
const events = Array.from({ length: 2 * total + chunk }, (_, i) => makeEvent(`cpu-${i}`, 1));
const cpuMs = { bare: 0, wrapper: 0 };
let next = { bare: 0, wrapper: 0 };
const side = async (name: "bare" | "wrapper", count: number, measured: boolean) => {
  const fn = name === "bare" ? bare : wrapper;
  const before = process.cpuUsage();
  for (let k = 0; k < count; k++) await fn(next[name]++);
  const used = process.cpuUsage(before);
  if (measured) cpuMs[name] += (used.user + used.system) / 1000;
};

await side("bare", chunk, false);
await side("wrapper", chunk, false);
next = { bare: 0, wrapper: 0 };
for (let done = 0; done < total; done += chunk) {
  const first = (done / chunk) % 2 === 0 ? "bare" : "wrapper";
  await side(first, chunk, true);
  await side(first === "bare" ? "wrapper" : "bare", chunk, true);
}
const per = (ms: number) => round((1000 * ms) / total, 1);
console.log(
  `mode ${mode}, ${total} events each: guard.${mode} ${per(cpuMs.bare)} µs CPU/event, s3Handler ${per(cpuMs.wrapper)} µs (+${per(cpuMs.wrapper - cpuMs.bare)} µs)`,
);
if (opts.profile) {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  await side("wrapper", total, false);
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(opts.profile, JSON.stringify(profile));
  session.disconnect();
}
