/**
 * A child process of sqlite.test.ts: opens the store on the given file, waits for the common start time, claims
 * subjects 0..n-1 of one event each as fast as it can, and prints which it won and how the others were refused.
 * Usage: claimer.ts <file> <worker> <subjects> <startAtMs>
 */
import { randomUUID } from "node:crypto";
import { positionFromNumber } from "../../../src/core/position.js";
import { classifyRefusal } from "../../../src/core/state.js";
import { SqliteStore } from "../../../src/stores/sqlite/index.js";

const [filename, worker, subjects, startAt] = process.argv.slice(2);
const store = new SqliteStore({ filename: String(filename), busyTimeoutMs: 30_000 });
while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
const won: number[] = [];
const refused: Record<string, number> = {};
for (let i = 0; i < Number(subjects); i++) {
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
process.stdout.write(`${JSON.stringify({ worker: Number(worker), won, refused })}\n`);
