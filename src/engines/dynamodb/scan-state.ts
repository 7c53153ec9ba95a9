import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { StateRecord } from "../../core/state.js";
import {
  claimedBeforeFence,
  type ForgetOptions,
  forgetLeaseBoundMs,
  listFrom,
  type StateQuery,
} from "../../core/state-admin.js";
import { type Item, N, S } from "./expressions.js";
import { scanAll } from "./scan-all.js";

export interface StateScan {
  client: DynamoDBClient;
  table: string;
  /** Placeholders → attribute names: the state attributes (`#st`, `#fence`, …) and the key. */
  names: Record<string, string>;
  /** An item as a record; undefined for an item without state (a user's row never claimed). */
  toRecord(item: Item): StateRecord | undefined;
}

/**
 * The records of a DynamoDB table that match `query`, in the admin order. A table has no index that orders state
 * by status or age, so this scans every page (strongly consistent, filtered by status and fence on the server),
 * then sorts and limits here. The stored result is not read.
 */
export async function scanState(scan: StateScan, query: StateQuery): Promise<StateRecord[]> {
  const { "#res": _result, ...names } = scan.names;
  const values: Item = {};
  const filter = ["attribute_exists(#fence)"];
  if (query.status !== undefined) {
    filter.push("#st = :st");
    values[":st"] = S(query.status);
  }
  const before = claimedBeforeFence(query);
  if (before !== undefined) {
    filter.push("#fence < :before");
    values[":before"] = N(before);
  }
  const items = await scanAll(scan.client, {
    TableName: scan.table,
    ConsistentRead: true,
    ProjectionExpression: Object.keys(names).join(", "),
    FilterExpression: filter.join(" AND "),
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  });
  const records = items.map((item) => scan.toRecord(item)).filter((r): r is StateRecord => r !== undefined);
  return listFrom(records, query);
}

/** The condition of `forget`: state is there, and no lease holds it (core forgetRefused, `:running`, `:bound`). */
export const FORGET_CONDITION =
  "attribute_exists(#fence) AND (#st <> :running OR attribute_not_exists(#lease) OR #lease <= :bound)";

export function forgetValues(options: ForgetOptions): Item {
  return { ":running": S("running"), ":bound": N(forgetLeaseBoundMs(options)) };
}
