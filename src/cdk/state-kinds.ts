/**
 * Where a pipeline keeps the guard's state, and the tag that says so on its function. No imports: `eonce audit
 * template` (src/audit/rules/guard-table.ts) reads the tag without loading aws-cdk-lib.
 *
 * - `table`: a state table of the stack (the construct's default);
 * - `inline`: in the rows of the pipeline's own table (InlineDynamoDBStore): no state table;
 * - `external`: somewhere the stack does not hold (PostgreSQL, another stack's table).
 */
export type StateKind = "table" | "inline" | "external";
export const STATE_KINDS: readonly StateKind[] = ["table", "inline", "external"];

/**
 * The tag on the function of a pipeline whose state is not in a state table of the stack: its StateKind (`inline`,
 * `external`). A template holding such a function has a guard, though it has no guard table.
 */
export const STATE_TAG = "eonce:state";

/**
 * The tag that says what a table is to `eonce audit template` (src/audit/rules/guard-table.ts): `state-table` marks a
 * guard table of any shape, any other value says a table keyed like one (`pk`) is not one.
 */
export const ROLE_TAG = "eonce:role";
/** The role of the table whose stream a `dynamodb-streams` pipeline reads: its items are events, not guard state. */
export const SOURCE_TABLE_ROLE = "source";
