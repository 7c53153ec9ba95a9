import type { WriteOutcome } from "../../core/store.js";
import type { DispatchedExecution } from "../../durable/payload.js";
import { StepEffects } from "../../durable/step-effects.js";
import type { StepCommit, StepCommitAnswer, StepEffectsEngine } from "../../durable/step-engine.js";
import { fenceHolder, fenceKey, positionOf, stoppedExec } from "../../durable/step-keys.js";
import type { StepEffectsCommonOptions } from "../../durable/step-options.js";
import { isMemoryWrite, landMemoryWrite, type MemoryAtomicWrite } from "./atomic-write.js";
import { memoryEngine } from "./engine.js";

/**
 * Guarded steps in process memory, for the fault simulator (src/sim/durable-history.ts) and tests: the markers and
 * fences in two maps, your `MemoryAtomicWrite`s applied with them in one synchronous call (nothing can run between),
 * the fence move a memory write the `MemoryStore` folds. Nothing survives the process: not for production.
 */
export class MemoryStepEffects extends StepEffects<MemoryAtomicWrite> {
  constructor(options: StepEffectsCommonOptions = {}) {
    super(new MemoryStepEngine(), { markerExpiresAfterSeconds: 120 * 24 * 3600, ...options });
  }
}

interface Fence {
  pos: string;
  exec: string;
}

class MemoryStepEngine implements StepEffectsEngine<MemoryAtomicWrite> {
  readonly what = "MemoryStepEffects";
  readonly displayName = memoryEngine.displayName;
  readonly maxWrites = memoryEngine.limits.maxWritesPerCommit;
  readonly maxResultBytes = memoryEngine.limits.maxResultBytes;
  readonly #markers = new Map<string, { fence: number; result: string | undefined }>();
  readonly #fences = new Map<string, Fence>();

  isWrite(write: { engine: string }): write is MemoryAtomicWrite {
    return isMemoryWrite(write);
  }

  async commit(step: StepCommit<MemoryAtomicWrite>): Promise<StepCommitAnswer> {
    const marker = this.#markers.get(step.markerKey);
    if (marker) return { kind: "marker", fence: marker.fence, result: marker.result };
    const key = fenceKey(step.execution);
    const held = this.#fences.get(key);
    if (!this.#moves(held, step.execution))
      return { kind: "fence", holder: fenceHolder(held?.pos, held?.exec) };
    this.#fences.set(key, { pos: positionOf(step.execution), exec: step.execution.executionName });
    this.#markers.set(step.markerKey, { fence: step.fence, result: step.result });
    const writes: WriteOutcome[] = step.writes.map((w) => ({
      description: w.description,
      status: landMemoryWrite(w) ? "applied" : "stale",
    }));
    return { kind: "landed", writes };
  }

  async stop(execution: DispatchedExecution): Promise<"stopped" | "stale"> {
    const key = fenceKey(execution);
    const held = this.#fences.get(key);
    const stopped = stoppedExec(execution);
    const pos = positionOf(execution);
    const own = held?.pos === pos && (held.exec === execution.executionName || held.exec === stopped);
    if (held && !own && !(held.pos < pos)) return "stale";
    this.#fences.set(key, { pos, exec: stopped });
    return "stopped";
  }

  fenceWrite(execution: DispatchedExecution): MemoryAtomicWrite {
    return {
      engine: "memory",
      description: `execution fence ${execution.executionName}`,
      land: () => {
        const key = fenceKey(execution);
        if (!this.#moves(this.#fences.get(key), execution)) return false;
        this.#fences.set(key, { pos: positionOf(execution), exec: execution.executionName });
        return true;
      },
    };
  }

  async readMarker(key: string): Promise<{ result: string | undefined } | undefined> {
    const m = this.#markers.get(key);
    return m ? { result: m.result } : undefined;
  }

  /** The fence moves to `execution` when absent, older by position, or already this execution's (as on every engine). */
  #moves(held: Fence | undefined, execution: DispatchedExecution): boolean {
    const pos = positionOf(execution);
    return !held || held.pos < pos || (held.pos === pos && held.exec === execution.executionName);
  }
}
