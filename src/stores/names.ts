/**
 * The engines' names: the one list that the simulator (`npm run chaos -- --store`), `eonce state --store`, `eonce run
 * --state-store`, the test kit (`EONCE_STORES`) and vitest.config.ts read. No imports: the CLI and the test config
 * load it without loading any engine.
 */
export const STORE_NAMES = [
  "dynamodb",
  "dynamodb-inline",
  "memory",
  "postgres",
  "postgres-inline",
  "sqlite",
] as const;

export type StoreName = (typeof STORE_NAMES)[number];

/** The inline engines: the guard's state in the user's own rows (src/core/state-key.ts `inlineRowKey`). */
export const INLINE_STORE_NAMES = [
  "dynamodb-inline",
  "postgres-inline",
] as const satisfies readonly StoreName[];

export function isStoreName(value: string): value is StoreName {
  return (STORE_NAMES as readonly string[]).includes(value);
}
