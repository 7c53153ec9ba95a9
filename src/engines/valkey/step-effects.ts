import { UnsupportedAtomicWriteError } from "../../core/errors.js";
import { pickFields, resolveOptions, schemaFor } from "../../core/options.js";
import { stateKey } from "../../core/state-key.js";
import type { DispatchedExecution } from "../../durable/payload.js";
import { type ExecutionRef, executionOf, StepEffects } from "../../durable/step-effects.js";
import type { StepCommit, StepCommitAnswer, StepEffectsEngine } from "../../durable/step-engine.js";
import {
  fenceHolder,
  markerKey,
  markerStep,
  positionOf,
  type StepRef,
  stoppedExec,
} from "../../durable/step-keys.js";
import { STEP_EFFECTS_FIELDS, type StepEffectsCommonOptions } from "../../durable/step-options.js";
import {
  clientId,
  isValkeyAtomicWrite,
  type ValkeyAtomicWrite,
  writeOutcomes,
  writeParams,
} from "./atomic-write.js";
import type { ValkeyClient } from "./client.js";
import { valkeyEngine } from "./engine.js";
import { valkeyStoreError } from "./errors.js";
import { escapeTag, fenceRedisKey, markerRedisKey, valkeyHashTag } from "./keys.js";
import { VALKEY_STORE_OPTIONS } from "./options.js";
import { ScriptRunner, type WaitForReplicas } from "./runner.js";

const WHAT = "ValkeyStepEffects";

/** The options of `ValkeyStepEffects`. */
export interface ValkeyStepEffectsOptions extends StepEffectsCommonOptions {
  /**
   * The `ValkeyStore`'s client (the same object): the dispatcher's commit folds the fence move only into a store of
   * this client, and a step folds only writes made for it (a `ValkeyFencedSink` of that store).
   */
  client: ValkeyClient;
  /** The start of the fence and marker keys (`<prefix>{…}f`, `<prefix>{…}m…`). Default `eonce:`, as the store's. */
  keyPrefix?: string;
  /**
   * As the store's: after each step's script (and `stop`'s), WAIT until this many replicas acknowledged it; fewer is
   * a retryable `ReplicasNotReachedError`. A refused step (marker there, fence newer) rewrites what it was refused on,
   * unchanged, so that its WAIT covers it. Default: no WAIT.
   */
  waitForReplicas?: WaitForReplicas;
}

const OPTIONS = schemaFor<ValkeyStepEffectsOptions>()({
  ...pickFields(VALKEY_STORE_OPTIONS, ["client", "keyPrefix", "waitForReplicas"]),
  ...STEP_EFFECTS_FIELDS,
});

/**
 * Guarded steps on Valkey or Redis: one script per step (lua.ts `STEP`, one EVALSHA) checks the step's marker, then
 * the subject's execution fence, then runs your writes (`ValkeyFencedSink`, `valkeyWrite`), moves the fence and puts
 * the marker (expiring at `markerExpiresAfterSeconds`). The fence and the marker carry the subject's state-key hash
 * tag, the one the guard's state and its folded writes carry, so a step's writes must too (`hashTag(payload)`): one
 * slot per script, in cluster mode as on one server. Fences never expire (as the sink's stamps).
 */
export class ValkeyStepEffects extends StepEffects<ValkeyAtomicWrite> {
  readonly keyPrefix: string;

  constructor(options: ValkeyStepEffectsOptions) {
    const o = resolveOptions(WHAT, OPTIONS, options);
    super(new ValkeyStepEngine(o.client, o.keyPrefix, o.waitForReplicas), o);
    this.keyPrefix = o.keyPrefix;
  }

  /** The hash tag of an execution's slot (its state key's, `valkeyHashTag`): put it in every key a step writes. */
  hashTag(execution: ExecutionRef): string {
    return valkeyHashTag(stateKeyOf(executionOf(execution)));
  }
}

/** The guard's state key of an execution's event (what `fenceKey` of step-keys.ts keys the fence on). */
function stateKeyOf(execution: DispatchedExecution): string {
  return stateKey(execution.subject, execution.identity, execution.position !== null);
}

/** The step script's answer (lua.ts `STEP`). */
type StepReply =
  | ["marker", string | null, string | null]
  | ["fence", string | null, string | null]
  | ["landed", number[]];

class ValkeyStepEngine implements StepEffectsEngine<ValkeyAtomicWrite> {
  readonly what = WHAT;
  // As the store's commit: a script takes any number of keys (the server runs nothing else meanwhile).
  readonly maxWrites = valkeyEngine.limits.maxWritesPerCommit;
  readonly maxResultBytes = valkeyEngine.limits.maxResultBytes;
  readonly #client: ValkeyClient;
  readonly #prefix: string;
  readonly #runner: ScriptRunner;

  constructor(client: ValkeyClient, prefix: string, wait: WaitForReplicas | undefined) {
    this.#client = client;
    this.#prefix = prefix;
    this.#runner = new ScriptRunner(client, wait);
  }

  readonly displayName = valkeyEngine.displayName;
  readonly isWrite = isValkeyAtomicWrite;

  checkWrite(write: ValkeyAtomicWrite): void {
    if (write.client !== clientId(this.#client)) {
      throw new UnsupportedAtomicWriteError(`${WHAT} folds only writes made for its own client (its server)`);
    }
  }

  markerKey(execution: DispatchedExecution, step: StepRef): string {
    markerKey(execution, step); // the step's checks
    return markerRedisKey(this.#prefix, stateKeyOf(execution), markerStep(execution, step));
  }

  async commit(step: StepCommit<ValkeyAtomicWrite>): Promise<StepCommitAnswer> {
    const { execution } = step;
    // The slot is known only now (check has no execution): refused before anything is sent.
    const tag = escapeTag(stateKeyOf(execution));
    for (const w of step.writes) {
      if (w.tag !== tag) {
        throw new UnsupportedAtomicWriteError(
          `${WHAT} folds only writes in the subject's slot: ${w.key} is not tagged {${tag}} (hashTag)`,
        );
      }
    }
    const marker = step.markerKey;
    const w = writeParams(step.writes);
    const args = [
      positionOf(execution),
      execution.executionName,
      String(step.fence),
      step.result === undefined ? "" : `+${step.result}`,
      String(step.nowMs),
      String(step.expiresAtSeconds),
      execution.subject,
      step.stepName,
      String(step.writes.length),
      ...w.args,
    ];
    const keys = [marker, this.#fenceKey(execution), ...w.keys];
    const reply = (await this.#runner.run("step", "step", marker, keys, args)) as StepReply;
    if (reply[0] === "marker") {
      const [, fence, result] = reply;
      return { kind: "marker", fence: fence === null ? null : Number(fence), result: result ?? undefined };
    }
    if (reply[0] === "fence") return { kind: "fence", holder: fenceHolder(reply[1], reply[2]) };
    return { kind: "landed", writes: writeOutcomes(step.writes, reply[1]) };
  }

  async stop(execution: DispatchedExecution): Promise<"stopped" | "stale"> {
    const args = [positionOf(execution), stoppedExec(execution), execution.executionName];
    const out = await this.#runner.run(
      "stopStep",
      "stop",
      execution.executionName,
      [this.#fenceKey(execution)],
      args,
    );
    return out === 1 ? "stopped" : "stale";
  }

  fenceWrite(execution: DispatchedExecution): ValkeyAtomicWrite {
    return {
      engine: "valkey",
      description: `execution fence of ${execution.subject}`,
      client: clientId(this.#client),
      op: "fence",
      key: this.#fenceKey(execution),
      tag: escapeTag(stateKeyOf(execution)),
      args: [positionOf(execution), execution.executionName],
    };
  }

  async readMarker(key: string): Promise<{ result: string | undefined } | undefined> {
    let hash: Record<string, string>;
    try {
      hash = await this.#client.hgetall(key);
    } catch (error) {
      throw valkeyStoreError("read", key, error, this.#client);
    }
    return Object.keys(hash).length === 0 ? undefined : { result: hash.res };
  }

  /** The subject's fence: the state key's hash tag, then `f` (the guard's state hash is `<prefix>{<state key>}`). */
  #fenceKey(execution: DispatchedExecution): string {
    return fenceRedisKey(this.#prefix, stateKeyOf(execution));
  }
}
