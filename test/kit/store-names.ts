/**
 * The stores the store and guard suites run on, and the `EONCE_STORES` filter: each engine in each of its modes
 * (src/engines/registry.ts `ENGINE_MODES`), named by `modeName`: `dynamodb`, `dynamodb-inline`, ….
 */
import { type EngineModeName, MODE_NAMES } from "../../src/engines/registry.js";
// The test suite's own engines join the list first (registerEngine).
import "./test-engines.js";

/** A store under test: an engine in one of its modes. */
export type StoreName = EngineModeName;
export const STORE_NAMES: readonly StoreName[] = MODE_NAMES;

/** `"a, b"` → `["a", "b"]`; unset → undefined (no filter). */
export function parseStoreList(list: string | undefined): string[] | undefined {
  return list
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The engines `wanted` (EONCE_STORES; unset: all) and `allowed` (EONCE_PROJECT_STORES; unset: all) both name.
 * An unknown name in `wanted` throws, so a typo does not silently run nothing.
 */
export function selectStoreNames(wanted: string | undefined, allowed: string | undefined): StoreName[] {
  const w = parseStoreList(wanted);
  for (const n of w ?? []) {
    if (!(STORE_NAMES as readonly string[]).includes(n))
      throw new Error(`EONCE_STORES: unknown store ${JSON.stringify(n)} (${STORE_NAMES.join(", ")})`);
  }
  const a = parseStoreList(allowed);
  return STORE_NAMES.filter((n) => (!w || w.includes(n)) && (!a || a.includes(n)));
}

/** Whether a run with `EONCE_STORES=wanted` tests `store` (vitest.config.ts: which project runs the store suites). */
export function wantsStore(wanted: string | undefined, store: StoreName): boolean {
  return selectStoreNames(wanted, undefined).includes(store);
}
