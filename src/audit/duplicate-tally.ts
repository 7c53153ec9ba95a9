import { attributeValueOf, pairText, unpairText } from "./attribute-text.js";

/** One effect (key value, within its group with `--group-by`) held by more than one row. */
export interface DuplicateExample {
  /** The key attribute's value. */
  key: unknown;
  /** The group attribute's value (null: rows without it); only with a group attribute. */
  group?: unknown;
  rows: number;
  /** The primary keys of its first rows in scan order (at most `keysPerEffect` of them). */
  primaryKeys: Record<string, unknown>[];
}

/** A group (a value of the group attribute) that holds duplicated effects. */
export interface DuplicateGroup {
  /** null: the rows without the group attribute. */
  group: unknown;
  duplicatedEffects: number;
  extraRows: number;
}

export interface TallySummary {
  /** Rows tallied: rows holding the key attribute. */
  rows: number;
  /** Distinct effects: key values (pairs of group and key values with a group attribute). */
  effects: number;
  /** Effects held by more than one row. */
  duplicatedEffects: number;
  /** Rows beyond the first of each effect: what removing the duplicates would delete. */
  extraRows: number;
  /** All the rows of the duplicated effects, their first rows included. */
  rowsInDuplicatedEffects: number;
  /** Rows per duplicated effect → how many effects have that many rows (`{"2": 40, "3": 5}`). */
  rowsPerDuplicatedEffect: Record<string, number>;
  /** The duplicated effects, most rows first (then by value), at most `examples` of them. */
  examples: DuplicateExample[];
  /** Only with a group attribute. */
  groups: GroupSummary | null;
}

export interface GroupSummary {
  /** Distinct values of the group attribute among the rows tallied (rows without it count as one group). */
  read: number;
  /** Groups holding at least one duplicated effect. */
  withDuplicates: number;
  /** Rows tallied without the group attribute. */
  rowsWithoutGroup: number;
  /** The groups with the most extra rows (then by value), at most `examples` of them. */
  top: DuplicateGroup[];
}

interface Repeated {
  count: number;
  /** Primary key texts of its first rows, bounded. */
  keys: string[];
}

/** The group text of rows without the group attribute: no attribute text starts with "-". */
const NO_GROUP = "-";

/**
 * Counts rows per effect in bounded memory, for tables of millions of rows: per effect seen once, its text and its
 * row's primary key text (one map entry); per effect seen again, a count and the primary keys of its first
 * `keysPerEffect` rows. Rows are never kept.
 */
export class DuplicateTally {
  private readonly once = new Map<string, string>();
  private readonly repeated = new Map<string, Repeated>();
  private readonly groups = new Set<string>();
  private rows = 0;
  private rowsWithoutGroup = 0;

  /**
   * @param primaryKey the table's key attribute names (hash, then range; a SQL table's key columns in order), to decode
   *   the primary key texts
   * @param grouped effects are scoped to a group attribute's value
   */
  constructor(
    private readonly primaryKey: readonly string[],
    private readonly grouped: boolean,
    private readonly keysPerEffect: number,
  ) {}

  /** One row: its key attribute's text, its group attribute's text (undefined: absent), its primary key text. */
  add(keyText: string, groupText: string | undefined, primaryKeyText: string): void {
    this.rows++;
    let id = keyText;
    if (this.grouped) {
      if (groupText === undefined) this.rowsWithoutGroup++;
      const group = groupText ?? NO_GROUP;
      this.groups.add(group);
      id = pairText(group, keyText);
    }
    const repeated = this.repeated.get(id);
    if (repeated) {
      repeated.count++;
      if (repeated.keys.length < this.keysPerEffect) repeated.keys.push(primaryKeyText);
      return;
    }
    const first = this.once.get(id);
    if (first === undefined) {
      this.once.set(id, primaryKeyText);
      return;
    }
    this.once.delete(id);
    this.repeated.set(id, { count: 2, keys: [first, primaryKeyText].slice(0, this.keysPerEffect) });
  }

  summary(examples: number): TallySummary {
    let extraRows = 0;
    const histogram = new Map<number, number>();
    for (const { count } of this.repeated.values()) {
      extraRows += count - 1;
      histogram.set(count, (histogram.get(count) ?? 0) + 1);
    }
    const sorted = [...this.repeated].sort(
      ([a, x], [b, y]) => y.count - x.count || this.compareEffects(a, b),
    );
    return {
      rows: this.rows,
      effects: this.once.size + this.repeated.size,
      duplicatedEffects: this.repeated.size,
      extraRows,
      rowsInDuplicatedEffects: extraRows + this.repeated.size,
      rowsPerDuplicatedEffect: Object.fromEntries([...histogram].sort(([a], [b]) => a - b)),
      examples: sorted.slice(0, examples).map(([id, r]) => this.example(id, r)),
      groups: this.grouped ? this.groupSummary(examples) : null,
    };
  }

  /** Ties are ordered by key value, then by group (rows without the group last). */
  private compareEffects(a: string, b: string): number {
    if (!this.grouped) return compare(a, b);
    const [groupA, keyA] = unpairText(a);
    const [groupB, keyB] = unpairText(b);
    return compare(keyA, keyB) || compare(lastIfNone(groupA), lastIfNone(groupB));
  }

  private example(id: string, r: Repeated): DuplicateExample {
    const primaryKeys = r.keys.map((k) => this.primaryKeyOf(k));
    if (!this.grouped) return { key: attributeValueOf(id), rows: r.count, primaryKeys };
    const [group, key] = unpairText(id);
    return { key: attributeValueOf(key), group: groupValueOf(group), rows: r.count, primaryKeys };
  }

  private groupSummary(examples: number): GroupSummary {
    const byGroup = new Map<string, { duplicatedEffects: number; extraRows: number }>();
    for (const [id, { count }] of this.repeated) {
      const [group] = unpairText(id);
      const g = byGroup.get(group) ?? { duplicatedEffects: 0, extraRows: 0 };
      g.duplicatedEffects++;
      g.extraRows += count - 1;
      byGroup.set(group, g);
    }
    const top = [...byGroup]
      .sort(([a, x], [b, y]) => y.extraRows - x.extraRows || compare(lastIfNone(a), lastIfNone(b)))
      .slice(0, examples)
      .map(([group, g]) => ({ group: groupValueOf(group), ...g }));
    return {
      read: this.groups.size,
      withDuplicates: byGroup.size,
      rowsWithoutGroup: this.rowsWithoutGroup,
      top,
    };
  }

  /** The inverse of compositeKeyText, with the table's key names. */
  private primaryKeyOf(text: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    let rest = text;
    this.primaryKey.forEach((name, i) => {
      if (i === this.primaryKey.length - 1) {
        out[name] = attributeValueOf(rest);
        return;
      }
      const [first, others] = unpairText(rest);
      out[name] = attributeValueOf(first);
      rest = others;
    });
    return out;
  }
}

/** A table's primary key as one text (see DuplicateTally.add): a hash key, and a range key if any. */
export function primaryKeyText(hashText: string, rangeText: string | undefined): string {
  return compositeKeyText(rangeText === undefined ? [hashText] : [hashText, rangeText]);
}

/**
 * A primary key of any number of columns (a SQL table's) as one text: the first, paired with the text of the rest.
 * One or two columns give what primaryKeyText gives.
 */
export function compositeKeyText(texts: readonly string[]): string {
  const [first, ...rest] = texts;
  if (first === undefined) throw new Error("compositeKeyText: a primary key has at least one column");
  return rest.length === 0 ? first : pairText(first, compositeKeyText(rest));
}

function groupValueOf(text: string): unknown {
  return text === NO_GROUP ? null : attributeValueOf(text);
}

function lastIfNone(group: string): string {
  return group === NO_GROUP ? "\uffff" : group;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
