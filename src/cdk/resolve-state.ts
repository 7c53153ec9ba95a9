import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { OptionsError } from "../core/errors.js";
import { INLINE_RESERVED_PREFIX } from "../core/inline-prefix.js";
import {
  checkField,
  custom,
  oneOf,
  optionsRule,
  required,
  resolveOptions,
  schemaFor,
  string,
} from "../core/options.js";
import type {
  ExternalStateOptions,
  InlineStateOptions,
  RecordsTableAction,
  RecordsTableOptions,
  StateOptions,
  TableStateOptions,
} from "./props.js";
import { STATE_KINDS, type StateKind } from "./state-kinds.js";

/** Where the guard's state lives, after validation. */
export type ResolvedState =
  | { readonly kind: "table" }
  | {
      readonly kind: "inline";
      /** The user's table; undefined: the construct's records table. */
      readonly table: dynamodb.ITable | undefined;
      readonly keyAttribute: string;
    }
  | { readonly kind: "external" };

/**
 * What InlineDynamoDBStore calls on its table (src/engines/dynamodb/inline-store.ts): UpdateItem (claim, renew, commit with
 * the row, release) and GetItem (the fallback read of a refused claim). Never PutItem, Query or Scan.
 */
export const INLINE_STATE_ACTIONS: readonly RecordsTableAction[] = [
  "dynamodb:GetItem",
  "dynamodb:UpdateItem",
];

const isTable = (v: unknown) =>
  typeof v === "object" &&
  v !== null &&
  typeof (v as dynamodb.ITable).tableName === "string" &&
  typeof (v as dynamodb.ITable).tableArn === "string";

/** One schema per kind: a key of another kind (a table for `external`) is unknown, not ignored. */
const SCHEMAS = {
  table: schemaFor<TableStateOptions>()({ kind: required(oneOf(["table"])) }),
  inline: schemaFor<InlineStateOptions>()({
    kind: required(oneOf(["inline"])),
    table: custom<dynamodb.ITable>("a DynamoDB table (dynamodb.ITable)", isTable),
    keyAttribute: string({
      pattern: new RegExp(`^(?!${INLINE_RESERVED_PREFIX})`),
      expected: `a name outside the store's reserved prefix ${INLINE_RESERVED_PREFIX}`,
    }),
  }),
  external: schemaFor<ExternalStateOptions>()({ kind: required(oneOf(["external"])) }),
} as const;

const KIND = oneOf(STATE_KINDS);

/**
 * The state option, and the records table as it must then be: with inline state in the records table, the function
 * needs the inline store's actions there, and without `actions` given no others (no PutItem: rows are written by the
 * store's UpdateItem).
 */
export function resolveState(
  what: string,
  value: StateOptions | undefined,
  records: Required<RecordsTableOptions> | undefined,
  recordsActionsGiven: boolean,
): { state: ResolvedState; recordsTable: Required<RecordsTableOptions> | undefined } {
  if (value === undefined) return { state: { kind: "table" }, recordsTable: records };
  const where = `${what}: state`;
  const kind = stateKind(where, value);
  if (kind !== "inline") {
    resolveOptions(where, SCHEMAS[kind], value);
    return { state: { kind }, recordsTable: records };
  }
  const o = resolveOptions(where, SCHEMAS.inline, value);
  if (o.table !== undefined)
    return { state: { kind, table: o.table, keyAttribute: o.keyAttribute ?? "pk" }, recordsTable: records };
  if (records === undefined)
    throw new OptionsError(
      `${where}: inline state without a table lives in the records table: set recordsTable`,
    );
  optionsRule(
    where,
    o.keyAttribute === undefined || o.keyAttribute === records.keyAttribute,
    `keyAttribute (${o.keyAttribute}) must be the records table's (${records.keyAttribute})`,
  );
  const actions = recordsActionsGiven
    ? [...new Set([...records.actions, ...INLINE_STATE_ACTIONS])]
    : [...INLINE_STATE_ACTIONS];
  return {
    state: { kind, table: undefined, keyAttribute: records.keyAttribute },
    recordsTable: { ...records, actions },
  };
}

function stateKind(where: string, value: unknown): StateKind {
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (typeof value !== "object" || value === null || kind === undefined)
    throw new OptionsError(`${where}: must be an object with kind (${STATE_KINDS.join(", ")})`);
  return checkField(where, "kind", KIND, kind);
}
