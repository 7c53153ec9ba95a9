import { type Backend, counterWrite, type SinkRow, sinkDescription } from "../../sim/backend.js";
import type { TaggedWrite } from "../../sim/faulty-store.js";
import { quiet } from "../../sim/quiet.js";
import { MemoryOutbox } from "./outbox.js";
import { MemoryStepEffects } from "./step-effects.js";
import { type MemoryAtomicWrite, MemoryStore } from "./store.js";

export interface MemoryBackendOptions {
  onSinkLanded(subject: string, pos: string, fence: number): void;
  /** Broken on purpose (tests): the sink ignores position and fence. */
  unfencedSink?: boolean;
}

/** The memory store with a counter map and a fenced map as sink; everything synchronous inside. */
export function memoryBackend(o: MemoryBackendOptions): Backend {
  const store = new MemoryStore();
  const counters = new Map<string, { count: number; fences: number[] }>();
  const rows = new Map<string, SinkRow>();
  const put = (subject: string, pos: string, fence: number): boolean => {
    const old = rows.get(subject);
    if (!o.unfencedSink && old && (pos < old.pos || (pos === old.pos && old.fence >= fence))) return false;
    rows.set(subject, { pos, fence });
    o.onSinkLanded(subject, pos, fence);
    return true;
  };
  const count = (id: string, fence: number) => {
    const c = counters.get(id) ?? { count: 0, fences: [] };
    c.count++;
    c.fences.push(fence);
    counters.set(id, c);
    return true;
  };
  return {
    name: "memory",
    store,
    sinkReportsItself: true,
    counter: (e, fence): MemoryAtomicWrite =>
      counterWrite("memory", e, fence, { land: () => count(e.counterId, fence) }),
    sinkAtomic: (e, pos, fence): MemoryAtomicWrite & TaggedWrite => ({
      engine: "memory",
      description: sinkDescription(e, pos, fence),
      land: () => put(e.subject, pos, fence),
    }),
    sinkPut: async (e, pos, fence) => (put(e.subject, pos, fence) ? "applied" : "stale"),
    readCounter: async (e) => {
      const c = counters.get(e.counterId);
      return c ? { count: c.count, fences: [...c.fences] } : { count: 0, fences: [] };
    },
    readSink: async (subject) => rows.get(subject),
    readState: async (key) => {
      const state = await store.read(key);
      return { state, bytes: state ? Buffer.byteLength(JSON.stringify(state)) : undefined };
    },
    forget: async (key) => store.forget(key),
    stepEffects: (clock) => new MemoryStepEffects({ clock, ...quiet() }),
    outbox: async () => {
      const outbox = new MemoryOutbox();
      return { outbox, reader: async () => outbox };
    },
  };
}
