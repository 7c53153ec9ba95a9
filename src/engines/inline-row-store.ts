import { OptionsError, UnsupportedAtomicWriteError } from "../core/errors.js";
import { INLINE_RESERVED_PREFIX } from "../core/inline-prefix.js";
import { inlineRowKey } from "../core/state-key.js";
import type { AtomicWrite } from "../core/store.js";

/** A row write an inline store builds: the user's values for the row of one state key. */
export interface InlineRowWrite extends AtomicWrite {
  readonly rowKey: string;
}

/** How an inline store names its rows and what a row write may set. */
export interface InlineRowStoreOptions {
  /** The store's class, as its errors name it (`InlineDynamoDBStore`). */
  store: string;
  /** The user's table, as the store names it (on PostgreSQL qualified by its schema). */
  table: string;
  /** The key attribute (column): the row's, never a row write's. */
  key: string;
  /** What a row write sets: DynamoDB attributes or PostgreSQL columns. */
  noun: "attribute" | "column";
  /** The store's custom row of a state key; default inlineRowKey (src/core/state-key.ts). */
  rowKey?: ((stateKey: string) => string) | undefined;
  /** Names refused as reserved besides the key and `eo_*` (DynamoDB: the empty name). */
  reserved?: (name: string) => boolean;
}

/**
 * What both inline stores (DynamoDB, PostgreSQL) do with the user's rows, whatever the engine: the row of a state
 * key (the store's `rowKey`, checked, since a custom one is the user's code), the checks of a row write's
 * arguments, and which writes a commit folds: only those the store built, each for the committing key's own row
 * (another row would need a transaction, which inline state exists to avoid).
 */
export abstract class InlineRowStore<W extends InlineRowWrite> {
  /** The engine's name, which its row writes carry too. */
  abstract readonly engine: W["engine"];
  readonly #o: InlineRowStoreOptions;
  readonly #rowKey: (stateKey: string) => string;
  /** Writes built by the store: `canFold` accepts only these. */
  readonly #made = new WeakSet<W>();

  protected constructor(o: InlineRowStoreOptions) {
    this.#o = o;
    this.#rowKey = o.rowKey ?? inlineRowKey;
  }

  /** The user's table (on PostgreSQL qualified by its schema, e.g. `"public"."orders"`). */
  get tableName(): string {
    return this.#o.table;
  }

  /** The row (its key's value) that holds the state of `stateKey`. */
  rowKeyOf(stateKey: string): string {
    const row = this.#rowKey(stateKey);
    if (typeof row !== "string" || row.length === 0)
      throw new OptionsError(`${this.#o.store}: rowKey gave no row for ${stateKey}`);
    return row;
  }

  canFold(write: AtomicWrite): boolean {
    return write.engine === this.engine && this.#made.has(write as W);
  }

  /**
   * Checks the arguments of the store's `row(ctx, values)`: the guard context, an object, and each name: not the
   * key, not reserved, and what the engine can name (`checkName` throws OptionsError otherwise).
   */
  protected checkRow(
    ctx: { stateKey: string } | undefined,
    values: Record<string, unknown>,
    checkName: (name: string) => void,
  ): void {
    const { store, noun } = this.#o;
    if (typeof ctx?.stateKey !== "string")
      throw new OptionsError(`${store}.row: needs the guard context (its stateKey)`);
    if (typeof values !== "object" || values === null)
      throw new OptionsError(`${store}.row: ${noun}s must be an object`);
    for (const name of Object.keys(values)) {
      if (name === this.#o.key || name.startsWith(INLINE_RESERVED_PREFIX) || this.#o.reserved?.(name))
        throw new OptionsError(
          `${store}.row: ${noun} "${name}" is the key or reserved (${INLINE_RESERVED_PREFIX}*)`,
        );
      checkName(name);
    }
  }

  /** The row write of `stateKey`'s row with the engine's `fields`, remembered as the store's own. */
  protected made(stateKey: string, fields: Omit<W, "engine" | "description" | "rowKey">): W {
    const rowKey = this.rowKeyOf(stateKey);
    const description = `row ${this.#o.table}/${rowKey}`;
    const write = { engine: this.engine, description, rowKey, ...fields } as W;
    this.#made.add(write);
    return write;
  }

  /** A commit's row writes, checked: built by the store, for the committing key's own row (`row`). */
  protected rowWrites(row: string, writes: readonly AtomicWrite[] | undefined): W[] {
    const { store } = this.#o;
    return (writes ?? []).map((w) => {
      if (!this.canFold(w)) throw new UnsupportedAtomicWriteError(`${store} cannot fold a ${w.engine} write`);
      const r = w as W;
      if (r.rowKey !== row) {
        throw new UnsupportedAtomicWriteError(
          `${store} folds only the committing subject's own row (${row}), not ${r.rowKey}`,
        );
      }
      return r;
    });
  }
}
