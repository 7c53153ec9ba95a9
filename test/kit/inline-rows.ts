/**
 * The rows of inline state's test sink (test/kit/stores.ts, postgres-store.ts): a test names the row of a state key
 * (`rowFor`), and a row write needs that key back (`stateKeyOf`), which the store checks against the commit's key.
 */
export function inlineRows(rowKeyOf: (stateKey: string) => string): {
  rowFor(stateKey: string): string;
  stateKeyOf(row: string): string;
} {
  const stateKeys = new Map<string, string>();
  return {
    rowFor(stateKey) {
      const row = rowKeyOf(stateKey);
      stateKeys.set(row, stateKey);
      return row;
    },
    stateKeyOf(row) {
      const key = stateKeys.get(row);
      if (key === undefined) throw new Error(`inline harness: ${row} is not a rowFor() row`);
      return key;
    },
  };
}
