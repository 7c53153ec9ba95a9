import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  type TransactWriteItem,
  type Update,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { StoreError, TransactionLimitError, UnsupportedAtomicWriteError } from "../../core/errors.js";
import { resolveOptions, schemaFor } from "../../core/options.js";
import { type ClaimRequest, isOwnClaim, landedAs, type StateRecord } from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import { type DynamoDBAtomicWrite, isDynamoDBAtomicWrite } from "./atomic-write.js";
import * as dx from "./expressions.js";
import { type Item, N, S } from "./expressions.js";
import { sendFolded } from "./folded-transaction.js";
import {
  DYNAMODB_MAX_RESULT_BYTES,
  DYNAMODB_MAX_TRANSACTION_ACTIONS,
  DYNAMODB_MAX_TRANSACTION_BYTES,
  dynamoItemBytes,
} from "./limits.js";
import { DYNAMODB_TABLE_FIELDS } from "./options.js";
import { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "./schema-names.js";

/** The options of `DynamoDBStore`: the client and the state table (`createStateTable` makes one). */
export interface DynamoDBStoreOptions {
  client: DynamoDBClient;
  tableName: string;
}

const DYNAMODB_STORE_OPTIONS = schemaFor<DynamoDBStoreOptions>()(DYNAMODB_TABLE_FIELDS);

/** Placeholders → the state table's attribute names (schema-names.ts); the admin (admin.ts) uses them too. */
export const STATE_ATTRIBUTE_NAMES = {
  "#pk": STATE_KEY_ATTRIBUTE,
  "#st": "status",
  "#pos": "pos",
  "#eid": "eid",
  "#fence": "fence",
  "#tok": "tok",
  "#lease": "leaseUntil",
  "#cpos": "cpos",
  "#ceid": "ceid",
  "#res": "result",
  "#rskip": "resultOmitted",
  "#cfp": "cfp",
  "#exp": TTL_ATTRIBUTE,
  "#att": "att",
};

/** The names written out in the expressions: all but `status` and `result`, which are DynamoDB reserved words. */
const PLAIN: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(STATE_ATTRIBUTE_NAMES).filter(
    ([placeholder]) => placeholder !== "#st" && placeholder !== "#res",
  ),
);

/**
 * The state store on DynamoDB. Each operation is one conditional request that returns the old item on refusal
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), so refusals cost no extra read; a consistent GetItem is the
 * fallback only when a refusal carries no item.
 *
 * Attempts are one attribute for the current identity, so an item stays bounded whatever happens to its subject.
 * A claim first assumes another identity held the item (the common case: a new event) and resets the counter; when
 * the refusal shows the same identity could claim, a second write counts on from it.
 */
export class DynamoDBStore implements Store.StateStore {
  readonly engine = "dynamodb";
  readonly maxResultBytes = DYNAMODB_MAX_RESULT_BYTES;
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: DynamoDBStoreOptions) {
    const o = resolveOptions("DynamoDBStore", DYNAMODB_STORE_OPTIONS, options);
    this.#client = o.client;
    this.#table = o.tableName;
  }

  get tableName(): string {
    return this.#table;
  }

  claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    return dx.claimWith(req, "#pk", {
      send: async ({ update, condition, values }) => {
        const out = await this.#client.send(
          new UpdateItemCommand({
            ...stateUpdate(this.#table, req.key, update, condition, values),
            // The old item tells a takeover or supersede apart from a fresh claim, at no extra cost.
            ReturnValues: "ALL_OLD",
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
        const old = out.Attributes && Object.keys(out.Attributes).length > 0 ? out.Attributes : undefined;
        return old ? toRecord(old) : undefined;
      },
      refusedState: (item) => this.#refusedState("claim", req.key, item),
      wrap: (error) => wrap("claim", req.key, error),
    });
  }

  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const writes = dynamoWrites(req.writes);
    const { set, remove, values } = dx.claimAndCommitParts(req);
    values[":running"] = S("running");
    const input = stateUpdate(
      this.#table,
      req.key,
      `${set} REMOVE ${remove.join(", ")}`,
      dx.claimCondition(req, "#pk"),
      values,
    );
    const outcome = await this.#transact("claimAndCommit", req.key, input, writes);
    if (outcome.ok) return { claimed: true, writes: outcome.writes };
    const state = await this.#refusedState("claimAndCommit", req.key, outcome.item);
    // A retry of a claim-and-commit that landed.
    if (isOwnClaim(state, req) && state.status === "done")
      return { claimed: true, writes: unknownWrites(writes) };
    return { claimed: false, state };
  }

  renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    return dx.renewWith(this.#fenced, req);
  }

  release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    return dx.releaseWith(this.#fenced, req);
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const writes = dynamoWrites(req.writes);
    const outcome = await this.#transact("commit", req.key, commitUpdate(this.#table, req), writes);
    if (outcome.ok) return { committed: true, writes: outcome.writes };
    const state = outcome.item ? toRecord(outcome.item) : await this.read(req.key);
    // A retry of a commit that landed: only the holder of this fence could have committed it.
    if (landedAs(state, req.fence, "done")) return { committed: true, writes: unknownWrites(writes) };
    return { committed: false, state };
  }

  /**
   * The state update alone (one UpdateItem), or with effects in one TransactWriteItems. A write refused by its own
   * (fencing) condition means its target already holds a newer position: the update goes ahead without it, and the
   * write is reported stale. `ok: false` is the state update's own condition failing, with the old item.
   */
  async #transact(
    op: string,
    key: string,
    update: Update & { TableName: string },
    writes: DynamoDBAtomicWrite[],
  ): Promise<{ ok: true; writes: Store.WriteOutcome[] } | { ok: false; item?: Item }> {
    checkTransactionLimits(update, writes);
    const out = await sendFolded(this.#client, [{ Update: update }], writes, (e) => wrap(op, key, e));
    return out.ok ? out : { ok: false, item: out.refused[0]?.item };
  }

  /** A conditional update under FENCED_CONDITION, with the state it was refused on. */
  readonly #fenced: dx.FencedUpdate = async (op, req, expression, values) => {
    try {
      const all = { ...values, ":fence": N(req.fence), ":running": S("running") };
      await this.#client.send(
        new UpdateItemCommand({
          ...stateUpdate(this.#table, req.key, expression, dx.FENCED_CONDITION, all),
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return { ok: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return { ok: false, state: error.Item ? toRecord(error.Item) : await this.read(req.key) };
      }
      throw wrap(op, req.key, error);
    }
  };

  /** The state a refusal was decided on: the old item it returned, else a consistent read. */
  async #refusedState(op: string, key: string, item: Item | undefined): Promise<StateRecord> {
    const state = item && Object.keys(item).length > 0 ? toRecord(item) : await this.read(key);
    if (!state) throw new StoreError(`${op} of ${key} refused but the item is gone; retry`);
    return state;
  }

  async read(key: string): Promise<StateRecord | undefined> {
    try {
      const out = await this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: { [STATE_KEY_ATTRIBUTE]: S(key) },
          ConsistentRead: true,
        }),
      );
      return out.Item ? toRecord(out.Item) : undefined;
    } catch (error) {
      throw wrap("read", key, error);
    }
  }

  canFold(write: Store.AtomicWrite): boolean {
    return isDynamoDBAtomicWrite(write);
  }
}

function commitUpdate(table: string, req: Store.CommitRequest) {
  const { set, remove, values } = dx.commitParts(req);
  return stateUpdate(table, req.key, `${set} REMOVE ${remove.join(", ")}`, dx.FENCED_CONDITION, values);
}

/** An UpdateItem input on one state item. */
function stateUpdate(
  table: string,
  key: string,
  update: string,
  condition: string,
  values: Item,
): Update & { TableName: string } {
  const shape = dx.expressionShape(update, condition, PLAIN);
  return {
    TableName: table,
    Key: { [STATE_KEY_ATTRIBUTE]: S(key) },
    UpdateExpression: shape.update,
    ConditionExpression: shape.condition,
    ...(shape.names.length > 0 ? { ExpressionAttributeNames: pickNames(shape.names) } : {}),
    ExpressionAttributeValues: dx.usedValues(shape, values),
  };
}

function dynamoWrites(writes: readonly Store.AtomicWrite[] | undefined): DynamoDBAtomicWrite[] {
  return (writes ?? []).map((w) => {
    if (!isDynamoDBAtomicWrite(w))
      throw new UnsupportedAtomicWriteError(`DynamoDBStore cannot fold a ${w.engine} write`);
    return w;
  });
}

/** The reserved words' placeholders an expression uses (DynamoDB rejects unused ones). */
function pickNames(placeholders: readonly string[]): Record<string, string> {
  const names: Record<string, string> = {};
  for (const p of placeholders) names[p] = STATE_ATTRIBUTE_NAMES[p as keyof typeof STATE_ATTRIBUTE_NAMES];
  return names;
}

export function toRecord(item: Item): StateRecord {
  return dx.recordFrom(item, item[STATE_KEY_ATTRIBUTE]?.S ?? "", STATE_ATTRIBUTE_NAMES);
}

function wrap(op: string, key: string, error: unknown): StoreError {
  return dx.storeError("DynamoDB", op, key, error);
}

/**
 * DynamoDB refuses a transaction of more than 100 actions or 4 MB for good: say so before sending (the state update
 * is one of the actions). Sizes are DynamoDB's approximate item sizes of what each action carries.
 */
export function checkTransactionLimits(update: Update, writes: readonly { item: TransactWriteItem }[]): void {
  const actions = writes.length + 1;
  if (actions > DYNAMODB_MAX_TRANSACTION_ACTIONS) {
    throw new TransactionLimitError(
      `a commit folds ${writes.length} writes: DynamoDB transactions hold at most ${DYNAMODB_MAX_TRANSACTION_ACTIONS} actions, the commit's state update included`,
    );
  }
  const carried = (w: TransactWriteItem) =>
    w.Put?.Item ?? w.Update?.ExpressionAttributeValues ?? w.Delete?.Key ?? w.ConditionCheck?.Key ?? {};
  const bytes = writes.reduce(
    (sum, w) => sum + dynamoItemBytes(carried(w.item)),
    dynamoItemBytes(update.ExpressionAttributeValues ?? {}),
  );
  if (bytes > DYNAMODB_MAX_TRANSACTION_BYTES) {
    throw new TransactionLimitError(
      `a commit carries about ${bytes} bytes: DynamoDB transactions hold at most ${DYNAMODB_MAX_TRANSACTION_BYTES}`,
    );
  }
}
