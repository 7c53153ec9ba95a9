import { ConditionalCheckFailedException, DeleteItemCommand } from "@aws-sdk/client-dynamodb";
import type { StateRecord } from "../../core/state.js";
import {
  type ForgetOptions,
  type ForgetResult,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import { storeError } from "./expressions.js";
import { FORGET_CONDITION, forgetValues, scanState } from "./scan-state.js";
import { STATE_KEY_ATTRIBUTE } from "./schema-names.js";
import { DynamoDBStore, type DynamoDBStoreOptions, STATE_ATTRIBUTE_NAMES, toRecord } from "./store.js";

/**
 * The operator's view of a DynamoDB state table (src/core/state-admin.ts): `list` scans it, `forget` is one
 * conditional DeleteItem. Built from the store's own options; `close` destroys the client.
 */
export class DynamoDBStateAdmin extends StoreAdmin<DynamoDBStore> {
  constructor(private readonly options: DynamoDBStoreOptions) {
    super(new DynamoDBStore(options));
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    try {
      return await scanState(
        { client: this.options.client, table: this.store.tableName, names: STATE_ATTRIBUTE_NAMES, toRecord },
        query,
      );
    } catch (error) {
      throw storeError("DynamoDB", "list", this.store.tableName, error);
    }
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const values = forgetValues(options); // checked before the request: a bad option is no store error
    try {
      const out = await this.options.client.send(
        new DeleteItemCommand({
          TableName: this.store.tableName,
          Key: { [STATE_KEY_ATTRIBUTE]: { S: key } },
          ConditionExpression: FORGET_CONDITION,
          ExpressionAttributeNames: {
            "#fence": STATE_ATTRIBUTE_NAMES["#fence"],
            "#st": STATE_ATTRIBUTE_NAMES["#st"],
            "#lease": STATE_ATTRIBUTE_NAMES["#lease"],
          },
          ExpressionAttributeValues: values,
          ReturnValues: "ALL_OLD",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return { forgotten: true, state: toRecord(out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        return { forgotten: false, ...(error.Item ? { state: toRecord(error.Item) } : {}) };
      throw storeError("DynamoDB", "forget", key, error);
    }
  }

  async close(): Promise<void> {
    this.options.client.destroy();
  }
}
