/**
 * `dynamodb` and `inline` run on DynamoDB Local (the state table, or inline state in the user's rows); `postgres` and
 * `postgres-inline` (the state table, or inline state in the user's rows) on
 * the PostgreSQL server (EONCE_POSTGRES_URL, default the local one); `sqlite` in an in-memory database per history.
 */
export type StoreName = "memory" | "dynamodb" | "inline" | "postgres" | "postgres-inline" | "sqlite";
