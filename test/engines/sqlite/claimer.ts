/**
 * A child process of sqlite.test.ts: opens the store on the given file, says `ready`, waits for a line on stdin (all
 * start together), claims subjects 0..n-1 of one event each as fast as it can, and prints which it won and how the
 * others were refused. Usage: claimer.ts <file> <worker> <subjects>
 */
import { randomUUID } from "node:crypto";
import { positionFromNumber } from "../../../src/core/position.js";
import { classifyRefusal } from "../../../src/core/state.js";
import { SqliteStore } from "../../../src/engines/sqlite/index.js";

const [filename, worker, subjects] = process.argv.slice(2);
const store = new SqliteStore({ filename: String(filename), busyTimeoutMs: 30_000 });
process.stdout.write("ready\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
process.stdin.pause();
const startedAt = Date.now();
const won: number[] = [];
const refused: Record<string, number> = {};
// Each in its own order, so that the one that got going first does not simply win everything.
const order = Array.from({ length: Number(subjects) }, (_, i) => i).sort(() => Math.random() - 0.5);
for (const i of order) {
  const nowMs = Date.now();
  const req = {
    key: `o#subject-${i}`,
    position: positionFromNumber(1),
    identity: "event-1",
    nowMs,
    leaseUntilMs: nowMs + 60_000,
    expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
    supersede: false,
    // As the guard picks them: the clock in microseconds, sub-millisecond digits apart.
    fence: nowMs * 1000 + Math.floor(Math.random() * 1000),
    token: randomUUID(),
    leaseGraceMs: 0,
  };
  const r = await store.claim(req);
  if (r.claimed) won.push(i);
  else {
    const kind = classifyRefusal(r.state, req)?.kind ?? "claimable";
    refused[kind] = (refused[kind] ?? 0) + 1;
  }
}
store.close();
process.stdout.write(
  `${JSON.stringify({ worker: Number(worker), won, refused, startedAt, endedAt: Date.now() })}\n`,
);
