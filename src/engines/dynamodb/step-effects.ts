import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { resolveOptions, schemaFor, string } from "../../core/options.js";
import type { DispatchedExecution } from "../../durable/payload.js";
import { StepEffects } from "../../durable/step-effects.js";
import type { StepCommit, StepCommitAnswer, StepEffectsEngine } from "../../durable/step-engine.js";
import { fenceHolder, fenceKey, positionOf, stoppedExec } from "../../durable/step-keys.js";
import { STEP_EFFECTS_FIELDS, type StepEffectsCommonOptions } from "../../durable/step-options.js";
import { type DynamoDBAtomicWrite, isDynamoDBAtomicWrite } from "./atomic-write.js";
import { dynamodbEngine } from "./engine.js";
import { storeError } from "./expressions.js";
import { sendFolded } from "./folded-transaction.js";
import { DYNAMODB_TABLE_FIELDS } from "./options.js";

const WHAT = "DynamoDBStepEffects";

/** The options of `DynamoDBStepEffects`. */
export interface DynamoDBStepEffectsOptions extends StepEffectsCommonOptions {
  client: DynamoDBClient;
  /** The table of step markers and execution fences: one string hash key (`createTableIfMissing(client, name, "pk")`). */
  tableName: string;
  /** The table's hash key attribute. Default `pk`. */
  keyAttribute?: string;
}

const OPTIONS = schemaFor<DynamoDBStepEffectsOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  keyAttribute: string({ default: "pk" }),
  ...STEP_EFFECTS_FIELDS,
});

/**
 * Guarded steps on DynamoDB: one `TransactWriteItems` per step holds the subject's execution fence (an update on
 * condition that it is absent, older, or this execution's), the step's marker (a put on condition that it is absent;
 * `expiresAt` for a TTL) and your writes (`DynamoDBFencedSink.atomicPut`, `updateEffect`, …), at most 98.
 */
export class DynamoDBStepEffects extends StepEffects<DynamoDBAtomicWrite> {
  readonly tableName: string;
  constructor(options: DynamoDBStepEffectsOptions) {
    const o = resolveOptions(WHAT, OPTIONS, options);
    super(new DynamoDBStepEngine(o.client, o.tableName, o.keyAttribute), o);
    this.tableName = o.tableName;
  }
}

type Item = Record<string, AttributeValue>;
const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

class DynamoDBStepEngine implements StepEffectsEngine<DynamoDBAtomicWrite> {
  readonly what = WHAT;
  readonly maxWrites = dynamodbEngine.limits.maxWritesPerCommit;
  readonly maxResultBytes = dynamodbEngine.limits.maxResultBytes;
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
    private readonly key: string,
  ) {}

  readonly displayName = dynamodbEngine.displayName;
  readonly isWrite = isDynamoDBAtomicWrite;

  /** One transaction; refused writes (`stale` or `refused`) are dropped and the rest sent again. */
  async commit(step: StepCommit<DynamoDBAtomicWrite>): Promise<StepCommitAnswer> {
    const marker = this.#markerPut(step);
    const head = [{ Update: this.#fenceUpdate(step.execution) }, { Put: marker }];
    const out = await sendFolded(this.client, head, step.writes, (e) =>
      storeError("DynamoDB", "step", step.markerKey, e),
    );
    if (out.ok) return { kind: "landed", writes: out.writes };
    // The marker first: a step applied before is done, whatever the fence says now.
    const applied = out.refused.find((r) => r.index === 1);
    if (applied) {
      const fence = applied.item?.fence?.N;
      return {
        kind: "marker",
        fence: fence === undefined ? null : Number(fence),
        result: applied.item?.res?.S,
      };
    }
    const holder = out.refused[0]?.item;
    return { kind: "fence", holder: fenceHolder(holder?.pos?.S, holder?.exec?.S) };
  }

  async stop(execution: DispatchedExecution): Promise<"stopped" | "stale"> {
    const update = this.#fenceUpdate(execution, stoppedExec(execution));
    // This execution's own fence, or one already stopped, may be stopped (again).
    update.ConditionExpression = `${update.ConditionExpression} OR (#pos = :pos AND #exec = :own)`;
    update.ExpressionAttributeValues = {
      ...update.ExpressionAttributeValues,
      ":own": S(execution.executionName),
    };
    try {
      await this.client.send(new UpdateItemCommand(update));
      return "stopped";
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return "stale";
      throw storeError("DynamoDB", "stop", execution.executionName, error);
    }
  }

  fenceWrite(execution: DispatchedExecution): DynamoDBAtomicWrite {
    const update = this.#fenceUpdate(execution);
    delete update.ReturnValuesOnConditionCheckFailure;
    return {
      engine: "dynamodb",
      description: `execution fence of ${execution.subject}`,
      item: { Update: update },
    };
  }

  async readMarker(key: string): Promise<{ result: string | undefined } | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.table, Key: { [this.key]: S(key) }, ConsistentRead: true }),
      );
      return out.Item && { result: out.Item.res?.S };
    } catch (error) {
      throw storeError("DynamoDB", "read", key, error);
    }
  }

  /**
   * Moves the subject's fence to `execution` (as `exec`): lands when the fence is absent, older, or already this
   * execution's. `exec` is the execution name, or a stopped mark for `stop`.
   */
  #fenceUpdate(
    execution: DispatchedExecution,
    exec = execution.executionName,
  ): NonNullable<TransactWriteItem["Update"]> {
    return {
      TableName: this.table,
      Key: { [this.key]: S(fenceKey(execution)) },
      UpdateExpression: "SET #pos = :pos, #exec = :exec",
      ConditionExpression: "attribute_not_exists(#k) OR #pos < :pos OR (#pos = :pos AND #exec = :exec)",
      ExpressionAttributeNames: { "#k": this.key, "#pos": "pos", "#exec": "exec" },
      ExpressionAttributeValues: { ":pos": S(positionOf(execution)), ":exec": S(exec) },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    };
  }

  /** The marker's conditional put: lands only where no marker is (the step has not been applied). */
  #markerPut(step: StepCommit<DynamoDBAtomicWrite>): NonNullable<TransactWriteItem["Put"]> {
    const { execution } = step;
    const item: Item = {
      [this.key]: S(step.markerKey),
      exec: S(execution.executionName),
      step: S(step.stepName),
      subject: S(execution.subject),
      pos: S(positionOf(execution)),
      fence: N(step.fence),
      appliedAt: N(step.nowMs),
      expiresAt: N(step.expiresAtSeconds),
    };
    if (step.result !== undefined) item.res = S(step.result);
    return {
      TableName: this.table,
      Item: item,
      ConditionExpression: "attribute_not_exists(#k)",
      ExpressionAttributeNames: { "#k": this.key },
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    };
  }
}
