import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { OptionsError } from "../../core/errors.js";
import type { StateRecord } from "../../core/state.js";
import {
  type ForgetOptions,
  type ForgetResult,
  type InlineRowMapping,
  inlineKeyOfRow,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import { type Item, storeError } from "./expressions.js";
import {
  FORGOTTEN_NAMES,
  hasState,
  InlineDynamoDBStore,
  type InlineDynamoDBStoreOptions,
  toInlineRecord,
} from "./inline-store.js";
import { FORGET_CONDITION, forgetValues, scanState } from "./scan-state.js";

/** Inline state's admin takes the store's options, and with a custom `rowKey` its inverse for `list`. */
export type InlineDynamoDBStateAdminOptions = InlineDynamoDBStoreOptions &
  Pick<InlineRowMapping, "stateKeyOfRow">;

/**
 * The operator's view of inline state (src/core/state-admin.ts): the `eo_*` attributes of the user's rows.
 * `list` scans the table for rows that hold state (the user's attributes are not read); `forget` removes the state
 * attributes in one conditional UpdateItem and leaves the row and its user attributes. The row's write stamp
 * (`eo_wpos`, `eo_wfence`) stays too: it describes the user attributes, so an older event still cannot replace them.
 * Rows map to state keys by the store's `rowKey` and its inverse (src/core/state-admin.ts inlineKeyOfRow): the
 * default's (`stateKeyOfInlineRow`, src/core/state-key.ts), or a custom `rowKey`'s `stateKeyOfRow`;
 * with a custom `rowKey` and no inverse, `list` names each record by its row.
 */
export class InlineDynamoDBStateAdmin extends StoreAdmin<InlineDynamoDBStore> {
  readonly #client: DynamoDBClient;
  readonly #keyOfRow: (row: string) => string;

  constructor(options: InlineDynamoDBStateAdminOptions) {
    const { stateKeyOfRow: _inverse, ...storeOptions } = options;
    super(new InlineDynamoDBStore(storeOptions));
    this.#client = options.client;
    this.#keyOfRow = inlineKeyOfRow(this.engine, options, (key) => this.store.rowKeyOf(key));
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const key = this.store.keyAttribute;
    const names = FORGOTTEN_NAMES;
    try {
      return await scanState(
        {
          client: this.#client,
          table: this.store.tableName,
          names: { ...names, "#key": key },
          toRecord: (item) => {
            const row = item[key]?.S;
            return row !== undefined && hasState(item)
              ? toInlineRecord(this.#keyOfRow(row), item)
              : undefined;
          },
        },
        query,
      );
    } catch (error) {
      if (error instanceof OptionsError) throw error; // a stateKeyOfRow that is no inverse: no store error
      throw storeError("DynamoDB inline", "list", this.store.tableName, error);
    }
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const state = FORGOTTEN_NAMES;
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
