import { ROLE_TAG, STATE_TAG, type StateKind } from "../../cdk/state-kinds.js";
import { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "../../engines/dynamodb/schema-names.js";
import { finding } from "../findings.js";
import { asArray, asObject, booleanProperty, type Resource, type TemplateModel } from "../template.js";
import { FUNCTION_TYPES, TABLE_TYPES } from "../topology.js";
import type { Finding } from "./common.js";

/** The tag that says what a table is (src/cdk/state-kinds.ts): `state-table` marks a guard table, any other value unmarks one. */
export { ROLE_TAG };
export const STATE_TABLE_ROLE = "state-table";

/**
 * A guard state table: tagged `eonce:role: state-table`, or (untagged) shaped like the DynamoDB store's table:
 * one key, a string partition key named `pk` (src/engines/dynamodb/schema-names.ts).
 */
export function isGuardTable(table: Resource): boolean {
  const role = table.tags[ROLE_TAG];
  if (role !== undefined) return role === STATE_TABLE_ROLE;
  if (table.type === "AWS::Serverless::SimpleTable") {
    const key = asObject(table.properties.PrimaryKey);
    return key.Name === STATE_KEY_ATTRIBUTE && (key.Type === undefined || key.Type === "String");
  }
  if (!TABLE_TYPES.includes(table.type)) return false;
  const keys = asArray(table.properties.KeySchema).map(asObject);
  if (keys.length !== 1 || keys[0]!.AttributeName !== STATE_KEY_ATTRIBUTE || keys[0]!.KeyType !== "HASH")
    return false;
  const def = asArray(table.properties.AttributeDefinitions)
    .map(asObject)
    .find((d) => d.AttributeName === STATE_KEY_ATTRIBUTE);
  return def?.AttributeType === "S";
}

export function guardTables(model: TemplateModel): Resource[] {
  return model.ofType(...TABLE_TYPES, "AWS::Serverless::SimpleTable").filter(isGuardTable);
}

/** Rule state-table-no-ttl: a guard table without TTL enabled on expiresAt. */
export function checkStateTableTtl(model: TemplateModel): Finding[] {
  return guardTables(model).flatMap((table) => {
    // SAM's SimpleTable has no TTL setting at all.
    const ttl = asObject(table.properties.TimeToLiveSpecification);
    const enabled = booleanProperty(ttl.Enabled) !== false;
    if (enabled && ttl.AttributeName === TTL_ATTRIBUTE) return [];
    const what =
      enabled && ttl.AttributeName !== undefined
        ? `TTL on ${String(ttl.AttributeName)}, not on ${TTL_ATTRIBUTE}`
        : `no TTL on ${TTL_ATTRIBUTE}`;
    return [finding("state-table-no-ttl", table.id, `guard state table ${table.id} has ${what}`)];
  });
}

/** The tag values that say a function keeps its guard state somewhere other than a state table of the template. */
const STATE_ELSEWHERE: readonly (string | undefined)[] = ["inline", "external"] satisfies StateKind[];

/**
 * Functions tagged `eonce:state: inline` (the state in the rows of their own table) or `external` (outside the
 * template): EffectivelyOncePipeline tags its function so when its `state` prop is not a state table.
 */
export function functionsWithStateElsewhere(model: TemplateModel): Resource[] {
  return model.ofType(...FUNCTION_TYPES).filter((f) => STATE_ELSEWHERE.includes(f.tags[STATE_TAG]));
}
