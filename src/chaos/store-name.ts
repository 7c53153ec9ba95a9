/**
 * The simulator's stores are the engines (src/stores/names.ts): `dynamodb` and `dynamodb-inline` run on DynamoDB
 * Local (the state table, or inline state in the user's rows); `postgres` and `postgres-inline` on the PostgreSQL
 * server (EONCE_POSTGRES_URL, default the local one); `sqlite` in an in-memory database per history.
 */
export type { StoreName } from "../stores/names.js";
