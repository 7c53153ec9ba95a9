/**
 * The tables `eonce audit table`'s tests seed on every engine (test/audit/table*.test.ts), with the duplicates the
 * naive pipelines write. A missing attribute is a NULL column on SQL.
 */

/**
 * A records table (examples/records: hash key `id`, the upload's `sequencer`, `filename`) with known duplicates:
 * 30 uploads SEQ0…SEQ29 over file-0…file-9; SEQ0 has 3 more rows, SEQ1 2, SEQ2 and SEQ3 1; SEQ5 one row under
 * another filename; SEQ9 two rows without filename; 5 rows without a sequencer (test events). 45 rows.
 */
export function recordsRows(): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  const upload = (i: number, copy: number) =>
    rows.push({ id: `r${i}-${copy}`, sequencer: `SEQ${i}`, filename: `file-${i % 10}.jpg`, size: 100 + i });
  for (let i = 0; i < 30; i++) upload(i, 0);
  for (const [i, copies] of [
    [0, 3],
    [1, 2],
    [2, 1],
    [3, 1],
  ] as const)
    for (let c = 1; c <= copies; c++) upload(i, c);
  rows.push({ id: "r5-other", sequencer: "SEQ5", filename: "other.jpg" });
  rows.push({ id: "r9-nofile-0", sequencer: "SEQ9" }, { id: "r9-nofile-1", sequencer: "SEQ9" });
  for (let j = 0; j < 5; j++) rows.push({ id: `test-${j}`, filename: "file-0.jpg" });
  return rows;
}

/**
 * An orders charges table (examples/orders: hash key `chargeId`, `orderId`, `customerId`, `amountCents`):
 * 100 orders, order-0010, -0020 and -0030 charged twice, order-0040 three times. 105 rows.
 */
export function ordersRows(): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  const charge = (i: number, n: number) =>
    rows.push({
      chargeId: `ch-${i}-${n}`,
      orderId: `order-${String(i).padStart(4, "0")}`,
      customerId: `c-${i % 7}`,
      amountCents: 1000 + i,
    });
  for (let i = 0; i < 100; i++) charge(i, 0);
  for (const i of [10, 20, 30, 40]) charge(i, 1);
  charge(40, 2);
  return rows;
}

/** The figures both seeds give, whatever the engine. */
export const RECORDS_BY_SEQUENCER = {
  scannedCount: 45,
  rowsRead: 40,
  rowsWithoutKey: 5,
  effects: 30,
  duplicatedEffects: 6,
  extraRows: 10,
  rowsInDuplicatedEffects: 16,
  extraRowShare: 10 / 40,
  duplicatedRowShare: 16 / 40,
  rowsPerDuplicatedEffect: { "2": 3, "3": 2, "4": 1 },
  groups: null,
};

/** Effects scoped to the file: SEQ5 under two files is two effects, SEQ9's rows without a file a group of their own. */
export const RECORDS_BY_SEQUENCER_WITHIN_FILENAME = {
  rowsRead: 40,
  effects: 32,
  duplicatedEffects: 5,
  extraRows: 8,
  rowsInDuplicatedEffects: 13,
  rowsPerDuplicatedEffect: { "2": 3, "3": 1, "4": 1 },
  groups: {
    read: 12,
    withDuplicates: 5,
    rowsWithoutGroup: 2,
    top: [
      { group: "file-0.jpg", duplicatedEffects: 1, extraRows: 3 },
      { group: "file-1.jpg", duplicatedEffects: 1, extraRows: 2 },
      { group: "file-2.jpg", duplicatedEffects: 1, extraRows: 1 },
      { group: "file-3.jpg", duplicatedEffects: 1, extraRows: 1 },
      { group: null, duplicatedEffects: 1, extraRows: 1 },
    ],
  },
};

export const ORDERS_BY_ORDER = {
  scannedCount: 105,
  rowsRead: 105,
  rowsWithoutKey: 0,
  effects: 100,
  duplicatedEffects: 4,
  extraRows: 5,
  rowsInDuplicatedEffects: 9,
  extraRowShare: 5 / 105,
  duplicatedRowShare: 9 / 105,
};

/** The examples of the records seed, most rows first, then by value. */
export const RECORDS_EXAMPLES = [
  ["SEQ0", 4],
  ["SEQ1", 3],
  ["SEQ9", 3],
  ["SEQ2", 2],
  ["SEQ3", 2],
  ["SEQ5", 2],
];
