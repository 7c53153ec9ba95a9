import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { StateRecord } from "../../core/state.js";
import type { ForgetOptions, ForgetResult, StateAdmin, StateQuery } from "../../core/state-admin.js";
import { type Item, storeError } from "./expressions.js";
import {
  hasState,
  InlineDynamoDBStore,
  type InlineDynamoDBStoreOptions,
  NAMES,
  stateKeyOfRow,
  toInlineRecord,
} from "./inline.js";
import { FORGET_CONDITION, forgetValues, scanState } from "./scan-state.js";

/** Inline state's admin takes the store's options but its default row mapping (it must map rows back to keys). */
export type InlineStateAdminOptions = Omit<InlineDynamoDBStoreOptions, "rowKey">;

/**
 * The operator's view of inline state (src/core/state-admin.ts): the `eo_*` attributes of the user's rows.
 * `list` scans the table for rows that hold state (the user's attributes are not read); `forget` removes the state
 * attributes in one conditional UpdateItem and leaves the row and its user attributes. The row's write stamp
 * (`eo_wpos`, `eo_wfence`) stays too: it describes the user attributes, so an older event still cannot replace them.
 * Rows map to state keys by the store's default (`<subject>` ↔ `o#<subject>`; `u#…` rows are their own key).
 */
export class InlineStateAdmin implements StateAdmin {
  readonly engine = "dynamodb-inline";
  readonly store: InlineDynamoDBStore;
  readonly #client: DynamoDBClient;

  constructor(options: InlineStateAdminOptions) {
    this.store = new InlineDynamoDBStore(options);
    this.#client = options.client;
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const key = this.store.keyAttribute;
    const { "#wpos": _wpos, "#wfence": _wfence, ...names } = NAMES;
    try {
      return await scanState(
        {
          client: this.#client,
          table: this.store.tableName,
          names: { ...names, "#key": key },
          toRecord: (item) => {
            const row = item[key]?.S;
            return row !== undefined && hasState(item) ? toInlineRecord(stateKeyOfRow(row), item) : undefined;
          },
        },
        query,
      );
    } catch (error) {
      throw storeError("DynamoDB inline", "list", this.store.tableName, error);
    }
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const { "#wpos": _wpos, "#wfence": _wfence, ...state } = NAMES;
    const values = forgetValues(options); // checked before the request: a bad option is no store error
    try {
      const out = await this.#client.send(
        new UpdateItemCommand({
          TableName: this.store.tableName,
          Key: { [this.store.keyAttribute]: { S: this.store.rowKeyOf(key) } },
          UpdateExpression: `REMOVE ${Object.keys(state).join(", ")}`,
          ConditionExpression: FORGET_CONDITION,
          ExpressionAttributeNames: state,
          ExpressionAttributeValues: values,
          // The state attributes only: the user's attributes are not sent back.
          ReturnValues: "UPDATED_OLD",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return { forgotten: true, state: toInlineRecord(key, out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const item: Item | undefined = error.Item;
        return { forgotten: false, ...(hasState(item) ? { state: toInlineRecord(key, item) } : {}) };
      }
      throw storeError("DynamoDB inline", "forget", key, error);
    }
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }
}
