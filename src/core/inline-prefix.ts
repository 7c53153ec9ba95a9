/**
 * The prefix of inline state's names in the user's own rows: the DynamoDB store's attributes
 * (stores/dynamodb/inline.ts) and the PostgreSQL store's columns (stores/postgres/inline.ts). User names must not
 * start with it.
 */
export const INLINE_RESERVED_PREFIX = "eo_";
