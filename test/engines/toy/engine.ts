import type { Engine } from "../../../src/engines/engine.js";
import type { MemoryStore } from "../../../src/engines/memory/store.js";
import { ENGINES, registerEngine } from "../../../src/engines/registry.js";

/**
 * A toy engine defined only here, in the test suite: the proof that an engine outside src/engines joins every tool
 * through the registry alone (docs/store-authors.md). Its "server" is this process: a database is a `MemoryStore`
 * named by a `toy://<name>` URL, kept on `globalThis` so that a handler `eonce run` loads, the admin `eonce state`
 * opens and the test share it. The simulator's backend is the memory engine's (a fresh store per history).
 *
 * Data and factories only: the memory engine's modules load when a factory is called, so vitest.config.ts can
 * register it (test/kit/test-engines.ts) without loading them.
 */
export const TOY_URL_VARIABLE = "TOY_URL";

const DATABASES = Symbol.for("effectively-once.test.toy-databases");

/** The toy database a `toy://<name>` URL names, made on first use. */
export async function toyDatabase(url: string): Promise<MemoryStore> {
  const g = globalThis as { [DATABASES]?: Map<string, MemoryStore> };
  g[DATABASES] ??= new Map();
  const databases = g[DATABASES];
  const name = new URL(url).host;
  let db = databases.get(name);
  if (!db) {
    const { MemoryStore } = await import("../../../src/engines/memory/store.js");
    db = new MemoryStore();
    databases.set(name, db);
  }
  return db;
}

export const toyEngine: Engine = {
  name: "toy",
  displayName: "toy",
  folder: "toy",
  server: false,
  inline: false,
  connection: ["url"],
  requires: ["url"],
  env: { url: TOY_URL_VARIABLE },
  limits: { maxResultBytes: 64 * 1024, maxWritesPerCommit: 10 },
  durable: false,
  serverFaults: [],
  openAdmin: async (c) => {
    const { MemoryStateAdmin } = await import("../../../src/engines/memory/admin.js");
    return new MemoryStateAdmin(await toyDatabase(c.url as string));
  },
  openSimEnv: async () => {
    const { memoryBackend } = await import("../../../src/engines/memory/sim-backend.js");
    return {
      backend: (o) => memoryBackend({ onSinkLanded: o.onSinkLanded, unfencedSink: o.unfencedSink ?? false }),
      close: async () => {},
    };
  },
  where: (c) => `toy ${c.url ?? ""}`,
};

/** Registers the toy engine once per process (test files and the config may each import this). */
export function registerToyEngine(): Engine {
  return ENGINES.find((e) => e.name === toyEngine.name) ?? registerEngine(toyEngine);
}
