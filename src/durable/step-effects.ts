import type { StepConfig } from "@aws/durable-execution-sdk-js";
import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { clockFence } from "../core/acquire.js";
import { EffectRefusedError, TransactionLimitError, UnsupportedAtomicWriteError } from "../core/errors.js";
import { custom, integer, resolveOptions, schemaFor, string } from "../core/options.js";
import { OUTCOMES } from "../core/outcomes.js";
import type { Position } from "../core/position.js";
import { parseResult } from "../core/result.js";
import type { WriteOutcome } from "../core/store.js";
import { type DynamoDBAtomicWrite, isDynamoDBAtomicWrite } from "../engines/dynamodb/atomic-write.js";
import { storeError } from "../engines/dynamodb/expressions.js";
import { DYNAMODB_MAX_TRANSACTION_ACTIONS } from "../engines/dynamodb/limits.js";
import { DYNAMODB_TABLE_FIELDS } from "../engines/dynamodb/options.js";
import { Observer } from "../observe/observer.js";
import { type DispatchedExecution, type DispatchedPayload, dispatchedExecution } from "./payload.js";
import {
  type FenceHolder,
  fenceUpdate,
  holderOf,
  markerKey,
  markerPut,
  positionOf,
  STOPPED_PREFIX,
} from "./step-items.js";
import { serializeStepResult } from "./step-result.js";

const WHAT = "DynamoDBStepEffects";

/** The options of `DynamoDBStepEffects`. */
export interface DynamoDBStepEffectsOptions {
  client: DynamoDBClient;
  /** The table of step markers and execution fences: one string hash key (`createTableIfMissing(client, name, "pk")`). */
  tableName: string;
  /** The table's hash key attribute. Default `pk`. */
  keyAttribute?: string;
  /**
   * How long a step's marker is kept, in seconds (the `expiresAt` attribute, for a TTL if you enable one). Default
   * 120 days: past the longest retention of a durable execution (90 days), so a step cannot apply again while its
   * execution can still run.
   */
  markerExpiresAfterSeconds?: number;
  /** The `pipeline` metric dimension and log field. Default as the Lambda wrappers: EONCE_PIPELINE, the function name. */
  pipeline?: string;
  logger?: Logger;
  metrics?: Metrics;
}

const STEP_EFFECTS_OPTIONS = schemaFor<DynamoDBStepEffectsOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  keyAttribute: string({ default: "pk" }),
  markerExpiresAfterSeconds: integer({ min: 1, default: 120 * 24 * 3600 }),
  pipeline: string(),
  logger: custom<Logger>("a Powertools Logger instance", (v) => typeof v === "object" && v !== null),
  metrics: custom<Metrics>("a Powertools Metrics instance", (v) => typeof v === "object" && v !== null),
});

/** What a guarded step's function gets: the execution, a fence for its sink writes, and `atCommit`. */
export interface StepEffectContext {
  executionName: string;
  stepName: string;
  subject: string;
  identity: string;
  /** The event's position (a `FenceSource` with `fence`: `sink.atomicPut(ctx, item)` takes this context). */
  position: Position | undefined;
  /** This application's fence, from the clock: between two steps of one execution writing one sink row, the later wins. */
  fence: number;
  /** Adds a DynamoDB write to the step's transaction: it lands with the marker, or not at all. */
  atCommit(write: DynamoDBAtomicWrite): void;
}

/**
 * How a guarded step ended (statuses of `src/core/outcomes.ts`): `processed` (its effects and marker landed now),
 * `duplicate` (the step was applied before: its stored result) or `stale` (a newer execution of the subject holds
 * the fence, or this one was stopped: nothing was written).
 */
export type StepEffectOutcome<R> =
  | { status: "processed"; result: R; writes: WriteOutcome[] }
  | { status: "duplicate"; result: R }
  | { status: "stale"; current: FenceHolder };

/** A durable context as far as `step` needs it (`DurableContext` of `@aws/durable-execution-sdk-js`). */
export interface StepHost {
  /** Runs `fn` as a durable step named `name`: checkpointed, retried by `config.retryStrategy`, replayed after. */
  step<T>(name: string, fn: () => Promise<T>, config?: StepConfig<T>): PromiseLike<T>;
}

/** Which execution: the payload the dispatcher sent, or the execution it names. */
export type ExecutionRef = DispatchedPayload | DispatchedExecution;

/**
 * Step effects that land once: each guarded step's DynamoDB writes commit in one `TransactWriteItems` with the step's
 * marker (keyed by execution and step name) and the subject's execution fence. A step that runs again (a crash after
 * its effects and before the durable SDK's checkpoint, a retry, a second execution of the event) finds its marker and
 * gets its stored result; a step of an execution superseded by a newer position, or stopped, is refused (`stale`).
 * One request per guarded step.
 */
export class DynamoDBStepEffects {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #key: string;
  readonly #markerSeconds: number;
  readonly #observer: Observer;

  constructor(options: DynamoDBStepEffectsOptions) {
    const o = resolveOptions(WHAT, STEP_EFFECTS_OPTIONS, options);
    this.#client = o.client;
    this.#table = o.tableName;
    this.#key = o.keyAttribute;
    this.#markerSeconds = o.markerExpiresAfterSeconds;
    this.#observer = new Observer({ logger: o.logger, metrics: o.metrics, pipeline: o.pipeline });
  }

  /** The effects table. */
  get tableName(): string {
    return this.#table;
  }

  /**
   * `context.step(stepName, …)` around `apply`: the durable SDK checkpoints the outcome, and a replay returns it
   * without running anything.
   */
  step<R>(
    context: StepHost,
    stepName: string,
    execution: ExecutionRef,
    fn: (ctx: StepEffectContext) => R | Promise<R>,
    config?: StepConfig<StepEffectOutcome<R>>,
  ): PromiseLike<StepEffectOutcome<R>> {
    const exec = executionOf(execution);
    markerKey(exec, stepName); // a bad step name throws here, outside the step's retries
    return context.step(stepName, () => this.apply(exec, stepName, fn), config);
  }

  /**
   * Inside `context.step`: runs `fn` (which computes the step's writes with `ctx.atCommit` and its result; it runs
   * again whenever the step does, so any other effect of it must be safe to repeat), then one transaction writes
   * the fence, the marker and the writes. Store failures throw (`StoreError`), for the step's retry strategy.
   */
  async apply<R>(
    execution: ExecutionRef,
    stepName: string,
    fn: (ctx: StepEffectContext) => R | Promise<R>,
  ): Promise<StepEffectOutcome<R>> {
    const exec = executionOf(execution);
    const started = performance.now();
    const writes: DynamoDBAtomicWrite[] = [];
    const ctx = this.#context(exec, stepName, writes);
    const result = await fn(ctx);
    const outcome = await this.#commit<R>(exec, stepName, ctx.fence, result, writes);
    this.#observe(exec, stepName, outcome, performance.now() - started);
    return outcome;
  }

  #context(exec: DispatchedExecution, stepName: string, writes: DynamoDBAtomicWrite[]): StepEffectContext {
    return {
      executionName: exec.executionName,
      stepName,
      subject: exec.subject,
      identity: exec.identity,
      position: exec.position ?? undefined,
      fence: clockFence(Date.now(), Math.random()),
      atCommit: (write) => {
        if (!isDynamoDBAtomicWrite(write)) {
          throw new UnsupportedAtomicWriteError(
            `${WHAT} folds DynamoDB writes only, not a ${(write as { engine?: string }).engine} write`,
          );
        }
        writes.push(write);
      },
    };
  }

  /** One transaction; refused user writes (`stale` or `refused`) are dropped and the rest sent again. */
  async #commit<R>(
    exec: DispatchedExecution,
    stepName: string,
    fence: number,
    result: R,
    writes: DynamoDBAtomicWrite[],
  ): Promise<StepEffectOutcome<R>> {
    const json = serializeStepResult(result);
    const nowMs = Date.now();
    const marker = markerPut(this.#table, this.#key, exec, {
      stepName,
      fence,
      result: json,
      nowMs,
      expiresAtSeconds: Math.ceil(nowMs / 1000) + this.#markerSeconds,
    });
    if (writes.length + 2 > DYNAMODB_MAX_TRANSACTION_ACTIONS) {
      throw new TransactionLimitError(
        `a guarded step may fold ${DYNAMODB_MAX_TRANSACTION_ACTIONS - 2} writes, got ${writes.length}`,
      );
    }
    const dropped: WriteOutcome[] = [];
    let pending = writes;
    for (;;) {
      const items: TransactWriteItem[] = [
        { Update: fenceUpdate(this.#table, this.#key, exec) },
        { Put: marker },
        ...pending.map((w) => w.item),
      ];
      const answer = await this.#send(items, marker.Item?.[this.#key]?.S ?? "");
      if (answer.kind === "landed") {
        const applied = pending.map((w) => ({ description: w.description, status: "applied" as const }));
        return { status: "processed", result, writes: [...applied, ...dropped] };
      }
      if (answer.kind === "marker") return this.#replay<R>(answer.item, fence, result, writes);
      if (answer.kind === "fence") return { status: "stale", current: holderOf(answer.item) };
      const refused = pending.filter((_, i) => answer.refused.includes(i + 2));
      const abort = refused.find((w) => w.refused === "abort");
      if (abort) throw new EffectRefusedError(abort.description);
      for (const w of refused) {
        dropped.push({ description: w.description, status: w.refused === "refused" ? "refused" : "stale" });
      }
      pending = pending.filter((w) => !refused.includes(w));
    }
  }

  /** The marker was there: this step was applied (by this very attempt when its fence is ours: a lost response). */
  #replay<R>(
    item: TransactionItem | undefined,
    fence: number,
    result: R,
    writes: DynamoDBAtomicWrite[],
  ): StepEffectOutcome<R> {
    if (item?.fence?.N === String(fence)) {
      return {
        status: "processed",
        result,
        writes: writes.map((w) => ({ description: w.description, status: "unknown" })),
      };
    }
    return { status: "duplicate", result: parseResult<R>(item?.res?.S) as R };
  }

  async #send(items: TransactWriteItem[], key: string): Promise<SendAnswer> {
    try {
      await this.#client.send(new TransactWriteItemsCommand({ TransactItems: items }));
      return { kind: "landed" };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw storeError("DynamoDB", "step", key, error);
      const reasons = error.CancellationReasons ?? [];
      const failed = (i: number) => reasons[i]?.Code === "ConditionalCheckFailed";
      // The marker first: a step applied before is done, whatever the fence says now.
      if (failed(1)) return { kind: "marker", item: reasons[1]?.Item };
      if (failed(0)) return { kind: "fence", item: reasons[0]?.Item };
      const refused = reasons.flatMap((r, i) => (i >= 2 && r.Code === "ConditionalCheckFailed" ? [i] : []));
      if (refused.length === 0) throw storeError("DynamoDB", "step", key, error); // conflict, throttling
      return { kind: "writes", refused };
    }
  }

  /**
   * Stops an execution's guarded steps: its fence is marked stopped, so each later step of it is refused (`stale`)
   * however late it lands. `stale` when a newer execution of the subject already holds the fence (it is refused
   * anyway). One request. Stop the durable execution itself with Lambda's `StopDurableExecution`.
   */
  async stop(execution: ExecutionRef): Promise<"stopped" | "stale"> {
    const exec = executionOf(execution);
    const update = fenceUpdate(this.#table, this.#key, exec, `${STOPPED_PREFIX}${exec.executionName}`);
    // This execution's own fence, or one already stopped, may be stopped (again).
    update.ConditionExpression = `${update.ConditionExpression} OR (#pos = :pos AND #exec = :own)`;
    update.ExpressionAttributeValues = {
      ...update.ExpressionAttributeValues,
      ":own": { S: exec.executionName },
    };
    try {
      await this.#client.send(new UpdateItemCommand(update));
      return "stopped";
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return "stale";
      throw storeError("DynamoDB", "stop", exec.executionName, error);
    }
  }

  /**
   * The fence move as a write for the dispatcher's commit (`ctx.atCommit`): an execution is the subject's newest from
   * the moment its start is committed, so an older execution's later steps are refused at once.
   */
  fenceWrite(execution: ExecutionRef): DynamoDBAtomicWrite {
    const exec = executionOf(execution);
    const update = fenceUpdate(this.#table, this.#key, exec);
    delete update.ReturnValuesOnConditionCheckFailure;
    return {
      engine: "dynamodb",
      description: `execution fence of ${exec.subject}`,
      item: { Update: update },
    };
  }

  /** Whether a step of an execution was applied, and its stored result (a consistent read; for tests and operators). */
  async marker(execution: ExecutionRef, stepName: string): Promise<{ applied: boolean; result?: unknown }> {
    const exec = executionOf(execution);
    const key = markerKey(exec, stepName);
    try {
      const out = await this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: { [this.#key]: { S: key } },
          ConsistentRead: true,
        }),
      );
      if (!out.Item) return { applied: false };
      const result = parseResult(out.Item.res?.S);
      return result === undefined ? { applied: true } : { applied: true, result };
    } catch (error) {
      throw storeError("DynamoDB", "read", key, error);
    }
  }

  #observe(
    exec: DispatchedExecution,
    stepName: string,
    outcome: StepEffectOutcome<unknown>,
    ms: number,
  ): void {
    const inv = this.#observer.invocation({ requestId: exec.executionName });
    const { status } = outcome;
    const text =
      status === "processed"
        ? `step ${stepName} applied for ${exec.subject}`
        : status === "duplicate"
          ? `step ${stepName} already applied for ${exec.subject}: stored result returned`
          : `step ${stepName} refused for ${exec.subject}: ${
              outcome.current.stopped
                ? "the execution was stopped"
                : `superseded by ${outcome.current.position}`
            }`;
    inv.metrics.count(OUTCOMES[status].counter);
    inv.log(OUTCOMES[status].level, text, {
      status,
      step: stepName,
      executionName: exec.executionName,
      subject: exec.subject,
      identity: exec.identity,
      position: positionOf(exec),
      durationMs: Math.round(ms),
      ...(outcome.status === "processed" ? { writes: outcome.writes } : {}),
    });
    try {
      inv.flush();
    } catch (error) {
      inv.log("warn", "metrics could not be published", { error }); // never fail a step over metrics
    }
  }
}

type TransactionItem = NonNullable<
  NonNullable<TransactionCanceledException["CancellationReasons"]>[number]["Item"]
>;
type SendAnswer =
  | { kind: "landed" }
  | { kind: "marker"; item: TransactionItem | undefined }
  | { kind: "fence"; item: TransactionItem | undefined }
  | { kind: "writes"; refused: number[] };

function executionOf(ref: ExecutionRef): DispatchedExecution {
  return "effectivelyOnce" in ref
    ? dispatchedExecution(ref)
    : dispatchedExecution({ effectivelyOnce: 1, execution: ref });
}
