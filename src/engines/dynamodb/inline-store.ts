import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { OptionsError, StoreError } from "../../core/errors.js";
import { INLINE_RESERVED_PREFIX } from "../../core/inline-prefix.js";
import { func, resolveOptions, schemaFor, string } from "../../core/options.js";
import { type ClaimRequest, claimAllowed, isOwnClaim, landedAs, type StateRecord } from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import { InlineRowStore } from "../inline-row-store.js";
import * as dx from "./expressions.js";
import { type Item, N, S } from "./expressions.js";
import { sendFolded } from "./folded-transaction.js";
import {
  CLAIMED_ROW_NOT_NEWER,
  checkRowExpression,
  FENCED_ROW_NOT_NEWER,
  INLINE_STATE_ATTRIBUTE_NAMES,
  type RowShape,
  rowAttributes,
  rowNewer,
  rowShape,
  type WritePosition,
} from "./inline-expressions.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "./limits.js";
import { DYNAMODB_TABLE_FIELDS } from "./options.js";
import { type DynamoDBOutboxWrite, isDynamoDBOutboxWrite } from "./outbox.js";
import { checkTransactionLimits } from "./store.js";
import { attributeItem, checkExpression, checkName } from "./values.js";

/** The options of `InlineDynamoDBStore`. */
export interface InlineDynamoDBStoreOptions {
  client: DynamoDBClient;
  /** The user's table: one row per subject (per state key). */
  tableName: string;
  /** The table's (string) hash key attribute. Default `pk`. */
  keyAttribute?: string;
  /**
   * The row a state key lives in; must be one-to-one. Default `inlineRowKey` (src/core/state-key.ts): an ordered
   * subject's row is the subject (`u#o#<rest>` for a subject `u#<rest>`), an unordered event's its state key.
   */
  rowKey?: (stateKey: string) => string;
}

const INLINE_STORE_OPTIONS = schemaFor<InlineDynamoDBStoreOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  keyAttribute: string({
    default: "pk",
    pattern: new RegExp(`^(?!${INLINE_RESERVED_PREFIX})`),
    expected: `a name outside the reserved prefix ${INLINE_RESERVED_PREFIX}`,
  }),
  rowKey: func<(stateKey: string) => string>(),
});

/** The user attributes of the row of one state key, written by that key's commit (`InlineDynamoDBStore.row`). */
export interface InlineDynamoDBRowWrite extends Store.AtomicWrite {
  readonly engine: "dynamodb-inline";
  readonly tableName: string;
  readonly rowKey: string;
  /** Attributes to set (marshalled) and to remove (given as `undefined`). */
  readonly set: Readonly<Item>;
  readonly remove: readonly string[];
}

/** What a row write needs from the guard's context: the state key (the row). */
export interface InlineDynamoDBRowSource {
  stateKey: string;
}

/**
 * A state store that keeps each subject's state inside the subject's own row of the user's table, so that a
 * handler whose only effect is that row pays one conditional UpdateItem per event (`guard.apply`): claim, effect
 * and commit together, no transaction, 1 WCU for a row under 1 KB. `guard.run` is two plain UpdateItems (claim,
 * then commit with the row). Duplicates and stale deliveries are one refused write that returns the old row.
 *
 * The only effects it folds are its own row write (`row(ctx, attributes)`) for the row of the committing state key
 * and outbox entries (`ctx.publish` with a `DynamoDBOutbox` of engine `dynamodb-inline`): a write to another row
 * would need a transaction, which is what this store exists to avoid (use `DynamoDBStore` with
 * `DynamoDBFencedSink` for that). A commit that publishes is the exception: the state row's update and the entries'
 * puts go as one TransactWriteItems (that commit only; without entries it stays one UpdateItem). The state machine sets and removes only `eo_*` attributes; the user's
 * attributes change only by a row write (folded into a commit, or `putRow` while the claim holds), and every row
 * write is fenced by the position and fence of the write the row holds (`eo_wpos`, `eo_wfence`), as the fenced sink
 * is: an older event that took an expired claim over cannot replace a newer event's work. A commit whose row write
 * is refused that way lands without it (the write is reported `stale`, one request more).
 */
export class InlineDynamoDBStore extends InlineRowStore<InlineDynamoDBRowWrite> implements Store.StateStore {
  readonly engine = "dynamodb-inline";
  readonly maxResultBytes = DYNAMODB_MAX_RESULT_BYTES;
  readonly #client: DynamoDBClient;
  readonly #key: string;
  /** Row update expressions by shape (see #rowUpdate). */
  readonly #shapes = new Map<string, RowShape>();

  constructor(options: InlineDynamoDBStoreOptions) {
    const o = resolveOptions("InlineDynamoDBStore", INLINE_STORE_OPTIONS, options);
    super({
      store: "InlineDynamoDBStore",
      table: o.tableName,
      key: o.keyAttribute,
      noun: "attribute",
      rowKey: o.rowKey,
      reserved: (name) => name.length === 0,
    });
    this.#client = o.client;
    this.#key = o.keyAttribute;
  }

  get keyAttribute(): string {
    return this.#key;
  }

  /**
   * The user attributes of the event's row, written with its commit (`ctx.atCommit(store.row(ctx, {...}))`).
   * `undefined` values remove the attribute. The key attribute and `eo_*` names are refused, and so is, here rather
   * than at the commit, anything DynamoDB would refuse whatever the row holds (src/engines/dynamodb/values.ts).
   */
  row(ctx: InlineDynamoDBRowSource, attributes: Record<string, unknown>): InlineDynamoDBRowWrite {
    this.checkRow(ctx, attributes, (name) => checkName("InlineDynamoDBStore.row", name));
    const remove: string[] = [];
    const present: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(attributes)) {
      if (value === undefined) remove.push(name);
      else present[name] = value;
    }
    const set = attributeItem("InlineDynamoDBStore.row", present);
    checkRowExpression(set, remove);
    return this.made(ctx.stateKey, { tableName: this.tableName, set, remove });
  }

  /**
   * The row write now, in its own request, while `ctx` holds the claim (`guard.run` progress): applied only if
   * the claim's fence still holds, else `stale`. Not atomic with the commit.
   */
  async putRow(
    ctx: InlineDynamoDBRowSource & { fence: number },
    attributes: Record<string, unknown>,
  ): Promise<"applied" | "stale"> {
    const write = this.row(ctx, attributes);
    if (Object.keys(write.set).length === 0 && write.remove.length === 0)
      throw new OptionsError("InlineDynamoDBStore.putRow: no attributes to write");
    const values: Item = { ":fence": N(ctx.fence), ":running": S("running") };
    const parts = { set: "", remove: [], values };
    const input = this.#rowUpdate(write.rowKey, parts, [write], "#pos", FENCED_ROW_NOT_NEWER);
    try {
      await this.#client.send(new UpdateItemCommand(input));
      return "applied";
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return "stale";
      throw wrap("putRow", ctx.stateKey, error);
    }
  }

  claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    return dx.claimWith(req, "#fence", {
      send: async ({ update, condition, values }) => {
        const out = await this.#client.send(
          new UpdateItemCommand({
            ...this.#update(this.rowKeyOf(req.key), update, condition, values),
            // The old values of the state attributes only: the user's row is not sent back.
            ReturnValues: "UPDATED_OLD",
          }),
        );
        // No old state (a new row, or one written by something else): a fresh claim.
        return hasState(out.Attributes) ? toInlineRecord(req.key, out.Attributes) : undefined;
      },
      refusedState: (item) => this.#refusedState("claim", req.key, item),
      wrap: (error) => wrap("claim", req.key, error),
    });
  }

  /** Its own row writes, and outbox entries (a commit with entries is a transaction). */
  override canFold(write: Store.AtomicWrite): boolean {
    return super.canFold(write) || (isDynamoDBOutboxWrite(write) && write.engine === this.engine);
  }

  // async: a write it cannot fold rejects the returned promise, as every store's does, rather than throwing.
  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const { rows, entries } = this.#writes(req.key, req.writes);
    return unlessRowNewer(rows, (writes) => this.#claimAndCommitOnce(req, writes, entries));
  }

  async #claimAndCommitOnce(
    req: Store.ClaimAndCommitRequest,
    writes: InlineDynamoDBRowWrite[],
    entries: DynamoDBOutboxWrite[],
  ): Promise<Store.ClaimAndCommitResult | "row-newer"> {
    const claim = dx.claimCondition(req, "#fence");
    const input = this.#rowUpdate(
      this.rowKeyOf(req.key),
      dx.claimAndCommitParts(req),
      writes,
      ":pos",
      writes.length > 0 ? `${claim} AND ${CLAIMED_ROW_NOT_NEWER}` : claim,
    );
    const sent = await this.#send("claimAndCommit", req.key, input, entries);
    if (sent.ok) return { claimed: true, writes: [...applied(writes), ...sent.entries] };
    const state = await this.#refusedState("claimAndCommit", req.key, sent.item);
    // A retry of a claim-and-commit that landed: the row write is in the same update, so it applied.
    if (isOwnClaim(state, req) && state.status === "done")
      return { claimed: true, writes: [...applied(writes), ...unknownWrites(entries)] };
    if (writes.length > 0 && claimAllowed(state, req) && rowNewer(sent.item, req.position, req.fence))
      return "row-newer";
    return { claimed: false, state };
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const { rows, entries } = this.#writes(req.key, req.writes);
    return unlessRowNewer(rows, (writes) => this.#commitOnce(req, writes, entries));
  }

  async #commitOnce(
    req: Store.CommitRequest,
    writes: InlineDynamoDBRowWrite[],
    entries: DynamoDBOutboxWrite[],
  ): Promise<Store.CommitResult | "row-newer"> {
    const input = this.#rowUpdate(
      this.rowKeyOf(req.key),
      dx.commitParts(req),
      writes,
      "#pos",
      writes.length > 0 ? FENCED_ROW_NOT_NEWER : dx.FENCED_CONDITION,
    );
    const sent = await this.#send("commit", req.key, input, entries);
    if (sent.ok) return { committed: true, writes: [...applied(writes), ...sent.entries] };
    const state = hasState(sent.item) ? toInlineRecord(req.key, sent.item) : await this.read(req.key);
    // A retry of a commit that landed: only the holder of this fence could have committed it.
    if (landedAs(state, req.fence, "done"))
      return { committed: true, writes: [...applied(writes), ...unknownWrites(entries)] };
    const holds = state?.fence === req.fence && state.status === "running";
    if (writes.length > 0 && holds && rowNewer(sent.item, state.position, req.fence)) return "row-newer";
    return { committed: false, state };
  }

  /**
   * The row's update: one UpdateItem, or, with outbox entries, one TransactWriteItems of the update and the
   * entries' puts (only a commit that publishes pays for a transaction). `ok: false` is the update's own condition
   * failing, with the row it was refused on (when DynamoDB returned it).
   */
  async #send(
    op: string,
    key: string,
    input: UpdateItemCommandInput,
    entries: DynamoDBOutboxWrite[],
  ): Promise<{ ok: true; entries: Store.WriteOutcome[] } | { ok: false; item: Item | undefined }> {
    if (entries.length === 0) {
      try {
        await this.#client.send(new UpdateItemCommand(input));
        return { ok: true, entries: [] };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw wrap(op, key, error);
        return { ok: false, item: error.Item };
      }
    }
    const update = {
      TableName: this.tableName,
      Key: input.Key ?? {},
      UpdateExpression: input.UpdateExpression ?? "",
      ConditionExpression: input.ConditionExpression,
      ExpressionAttributeNames: input.ExpressionAttributeNames,
      ExpressionAttributeValues: input.ExpressionAttributeValues,
    };
    checkTransactionLimits(update, entries);
    const out = await sendFolded(this.#client, [{ Update: update }], entries, (e) => wrap(op, key, e));
    return out.ok ? { ok: true, entries: out.writes } : { ok: false, item: out.refused[0]?.item };
  }

  renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    return dx.renewWith(this.#fenced, req);
  }

  release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    return dx.releaseWith(this.#fenced, req);
  }

  /** A conditional update under FENCED_CONDITION, with the state it was refused on. */
  readonly #fenced: dx.FencedUpdate = async (op, req, expression, values) => {
    const all = { ...values, ":fence": N(req.fence), ":running": S("running") };
    try {
      await this.#client.send(
        new UpdateItemCommand(
          this.#update(this.rowKeyOf(req.key), expression, "#fence = :fence AND #st = :running", all),
        ),
      );
      return { ok: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return {
          ok: false,
          state: hasState(error.Item) ? toInlineRecord(req.key, error.Item) : await this.read(req.key),
        };
      }
      throw wrap(op, req.key, error);
    }
  };

  async read(key: string): Promise<StateRecord | undefined> {
    try {
      const out = await this.#client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: { [this.#key]: S(this.rowKeyOf(key)) },
          ConsistentRead: true,
        }),
      );
      // A row without state attributes (written by something else) holds no claim.
      return hasState(out.Item) ? toInlineRecord(key, out.Item) : undefined;
    } catch (error) {
      if (error instanceof OptionsError) throw error;
      throw wrap("read", key, error);
    }
  }

  /** The state a refusal was decided on: the old row it returned, else a consistent read. */
  async #refusedState(op: string, key: string, item: Item | undefined): Promise<StateRecord> {
    const state = hasState(item) ? toInlineRecord(key, item) : await this.read(key);
    if (!state) throw new StoreError(`${op} of ${key} refused but the row holds no state; retry`);
    return state;
  }

  /**
   * The commit's writes: its row writes, checked (built by this store, for the committing key's own row), and its
   * outbox entries.
   */
  #writes(
    key: string,
    writes: readonly Store.AtomicWrite[] | undefined,
  ): { rows: InlineDynamoDBRowWrite[]; entries: DynamoDBOutboxWrite[] } {
    const entries: DynamoDBOutboxWrite[] = [];
    const others: Store.AtomicWrite[] = [];
    for (const w of writes ?? []) {
      if (isDynamoDBOutboxWrite(w) && w.engine === this.engine) entries.push(w);
      else others.push(w);
    }
    return { rows: this.rowWrites(this.rowKeyOf(key), others), entries };
  }

  /** An UpdateItem of state clauses only (the state attributes are named in the expressions: `eo_*` are valid). */
  #update(row: string, update: string, condition: string, values: Item): UpdateItemCommandInput {
    const shape = dx.expressionShape(update, condition, INLINE_STATE_ATTRIBUTE_NAMES);
    return this.#input(row, shape, undefined, dx.usedValues(shape, values));
  }

  /**
   * An UpdateItem of the state clauses `parts` with the row writes folded in. Its expressions are built once per
   * shape (the state clauses, the condition and the row's attribute names, a handful per store): this runs on every
   * `apply`, whose request is otherwise the raw write's.
   */
  #rowUpdate(
    row: string,
    parts: dx.UpdateParts,
    writes: InlineDynamoDBRowWrite[],
    position: WritePosition,
    condition: string,
  ): UpdateItemCommandInput {
    const attributes = rowAttributes(writes);
    const key = `${position}\n${parts.set}\n${parts.remove.join()}\n${condition}\n${attributes.key}`;
    let shape = this.#shapes.get(key);
    if (!shape) {
      shape = rowShape(parts, writes.length > 0, attributes, position, condition);
      // Row writes that fit one by one (checkRowExpression) may not fit together: refused before sending.
      checkExpression(`InlineDynamoDBStore: the update of row ${row}`, shape.expression.update);
      if (this.#shapes.size >= MAX_ROW_SHAPES) this.#shapes.clear();
      this.#shapes.set(key, shape);
    }
    const values = dx.usedValues(shape.expression, parts.values);
    for (let i = 0; i < shape.userValues.length; i++) {
      const placeholder = shape.userValues[i];
      const value = attributes.values[i];
      if (placeholder !== undefined && value !== undefined) values[placeholder] = value;
    }
    return this.#input(row, shape.expression, shape.names, values);
  }

  #input(
    row: string,
    shape: dx.ExpressionShape,
    names: Record<string, string> | undefined,
    values: Item,
  ): UpdateItemCommandInput {
    return {
      TableName: this.tableName,
      Key: { [this.#key]: S(row) },
      UpdateExpression: shape.update,
      ConditionExpression: shape.condition,
      ...(names !== undefined ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
    };
  }
}

export {
  FORGOTTEN_NAMES,
  INLINE_STATE_ATTRIBUTE_NAMES,
  INLINE_STATE_ATTRIBUTES,
} from "./inline-expressions.js";

/** Row shapes a store keeps (a handful in use; a store that sees more starts over). */
const MAX_ROW_SHAPES = 256;

function applied(writes: InlineDynamoDBRowWrite[]): Store.WriteOutcome[] {
  return writes.map((w) => ({ description: w.description, status: "applied" }));
}

export function hasState(item: Item | undefined): item is Item {
  return item !== undefined && item[INLINE_STATE_ATTRIBUTE_NAMES["#fence"]]?.N !== undefined;
}

export function toInlineRecord(key: string, item: Item): StateRecord {
  return dx.recordFrom(item, key, INLINE_STATE_ATTRIBUTE_NAMES);
}

function wrap(op: string, key: string, error: unknown): StoreError {
  return dx.storeError("DynamoDB inline", op, key, error);
}

/**
 * A commit (or apply) sent with its row writes; when the row holds a newer position's work (a direct write whose
 * event never committed), sent once more without them: it lands, and its writes are reported stale.
 */
async function unlessRowNewer<T extends object>(
  writes: InlineDynamoDBRowWrite[],
  once: (writes: InlineDynamoDBRowWrite[]) => Promise<T | "row-newer">,
): Promise<T> {
  const first = await once(writes);
  if (first !== "row-newer") return first;
  const second = await once([]);
  if (second === "row-newer")
    throw new Error("unreachable: an update without row writes has no row condition");
  if (!("writes" in second)) return second;
  // The second try's writes are the outbox entries' alone (they go with the commit either way).
  const stale = writes.map((w) => ({ description: w.description, status: "stale" as const }));
  return { ...second, writes: [...stale, ...(second.writes as Store.WriteOutcome[])] };
}

/** @deprecated The name of 0.x: use InlineDynamoDBRowWrite (removed in the next minor version, CHANGELOG.md). */
export type InlineRowWrite = InlineDynamoDBRowWrite;
/** @deprecated The name of 0.x: use InlineDynamoDBRowSource (removed in the next minor version, CHANGELOG.md). */
export type InlineRowSource = InlineDynamoDBRowSource;
