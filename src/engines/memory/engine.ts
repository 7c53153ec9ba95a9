import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import type { Engine } from "../engine.js";

/** The in-process store: the simulator's reference engine. Its state lives and dies with one process. */
export const memoryEngine = {
  name: "memory",
  displayName: "memory",
  folder: "memory",
  server: false,
  inline: false,
  connection: [],
  requires: [],
  env: {},
  // The same default as DynamoDB's, so that a history behaves alike on both.
  limits: { maxResultBytes: DYNAMODB_MAX_RESULT_BYTES, maxWritesPerCommit: 1000 },
  durable: true,
  serverFaults: [],
  // No openAdmin: there is nothing to connect to (`eonce state` does not offer it).
  openDemoStates: async () => {
    const { MemoryStore } = await import("./store.js");
    return { open: async () => new MemoryStore(), close: async () => {} };
  },
  openSimEnv: async () => {
    const { memoryBackend } = await import("./sim-backend.js");
    return {
      backend: (o) => memoryBackend({ onSinkLanded: o.onSinkLanded, unfencedSink: o.unfencedSink ?? false }),
      close: async () => {},
    };
  },
  where: () => "memory",
} as const satisfies Engine;
