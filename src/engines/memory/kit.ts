import type { EngineKit } from "../kit.js";
import { memoryBackend } from "./sim-backend.js";

/** The in-process store: the simulator's reference engine. Its state lives and dies with one process. */
export const memoryKit: EngineKit = {
  openAdmin: async (_c, context) => {
    throw context.usage("the memory store lives inside one process: there is nothing to connect to");
  },
  openSimEnv: async () => ({
    backend: (o) => memoryBackend({ onSinkLanded: o.onSinkLanded, unfencedSink: o.unfencedSink ?? false }),
    close: async () => {},
  }),
  where: () => "memory",
};
