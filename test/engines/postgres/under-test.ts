import { postgresInlineStoreUnderTest, postgresStoreUnderTest } from "../../kit/postgres-store.js";

/** The PostgreSQL engines of the store and guard suites (test/kit/stores.ts): test/kit/postgres-store.ts. */
export const storesUnderTest = {
  postgres: postgresStoreUnderTest,
  "postgres-inline": postgresInlineStoreUnderTest,
};
