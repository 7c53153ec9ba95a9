import { describe, expect, it } from "vitest";
import {
  attributeText,
  attributeValueOf,
  pairText,
  sqlValueText,
  unpairText,
} from "../../src/audit/attribute-text.js";
import { compositeKeyText, DuplicateTally, primaryKeyText } from "../../src/audit/duplicate-tally.js";

describe("attribute texts", () => {
  it("keep DynamoDB's equality: a number is not the string of its digits", () => {
    expect(attributeText({ N: "1" })).not.toBe(attributeText({ S: "1" }));
    expect(attributeText({ B: new Uint8Array([1, 2]) })).toBe("BAQI=");
    expect(attributeText({ BOOL: true })).toBe('J{"BOOL":true}');
  });

  it("give back the value: numbers as numbers when exact, else as text", () => {
    expect(attributeValueOf(attributeText({ N: "42" }))).toBe(42);
    expect(attributeValueOf(attributeText({ N: "12345678901234567890" }))).toBe("12345678901234567890");
    expect(attributeValueOf(attributeText({ S: "" }))).toBe("");
    expect(attributeValueOf(attributeText({ NULL: true }))).toEqual({ NULL: true });
  });

  it("SQL values: NULL is no value; integers and reals compare as SQLite does; bytes as base64", () => {
    expect(sqlValueText(null)).toBeUndefined();
    expect(sqlValueText(1n)).toBe(sqlValueText(1.0));
    expect(sqlValueText(1)).not.toBe(sqlValueText("1"));
    expect(sqlValueText(Buffer.from([1, 2]))).toBe("BAQI=");
    expect(attributeValueOf(sqlValueText(2n ** 62n) as string)).toBe("4611686018427387904");
  });

  it("pair unambiguously, whatever the values hold", () => {
    for (const [a, b] of [
      ["S12:ab", "S3:x"],
      ["", "S:"],
      ["S", ""],
      ["S10:", "N10"],
    ] as const)
      expect(unpairText(pairText(a, b))).toEqual([a, b]);
    expect(pairText("S1", "S23")).not.toBe(pairText("S12", "S3"));
  });
});

describe("DuplicateTally", () => {
  const add = (t: DuplicateTally, key: string, id: string, group?: string) =>
    t.add(`S${key}`, group === undefined ? undefined : `S${group}`, primaryKeyText(`S${id}`, undefined));

  it("counts effects seen once and again, and keeps at most keysPerEffect primary keys", () => {
    const t = new DuplicateTally(["id"], false, 1);
    for (const [key, id] of [
      ["a", "1"],
      ["a", "2"],
      ["a", "3"],
      ["b", "4"],
      ["c", "5"],
      ["c", "6"],
    ])
      add(t, key as string, id as string);
    expect(t.summary(10)).toEqual({
      rows: 6,
      effects: 3,
      duplicatedEffects: 2,
      extraRows: 3,
      rowsInDuplicatedEffects: 5,
      rowsPerDuplicatedEffect: { "2": 1, "3": 1 },
      examples: [
        { key: "a", rows: 3, primaryKeys: [{ id: "1" }] },
        { key: "c", rows: 2, primaryKeys: [{ id: "5" }] },
      ],
      groups: null,
    });
  });

  it("scopes effects to their group, rows without the group in a group of their own, listed last on ties", () => {
    const t = new DuplicateTally(["id"], true, 5);
    add(t, "k", "1", "g1");
    add(t, "k", "2", "g1");
    add(t, "k", "3", "g2");
    add(t, "k", "4");
    add(t, "k", "5");
    const s = t.summary(10);
    expect(s).toMatchObject({ rows: 5, effects: 3, duplicatedEffects: 2, extraRows: 2 });
    expect(s.examples).toEqual([
      { key: "k", group: "g1", rows: 2, primaryKeys: [{ id: "1" }, { id: "2" }] },
      { key: "k", group: null, rows: 2, primaryKeys: [{ id: "4" }, { id: "5" }] },
    ]);
    expect(s.groups).toEqual({
      read: 3,
      withDuplicates: 2,
      rowsWithoutGroup: 2,
      top: [
        { group: "g1", duplicatedEffects: 1, extraRows: 1 },
        { group: null, duplicatedEffects: 1, extraRows: 1 },
      ],
    });
  });

  it("decodes composite primary keys", () => {
    const t = new DuplicateTally(["pk", "sk"], false, 5);
    t.add("Sx", undefined, primaryKeyText("Sa", "N1"));
    t.add("Sx", undefined, primaryKeyText("Sa", "N2"));
    expect(t.summary(1).examples[0]?.primaryKeys).toEqual([
      { pk: "a", sk: 1 },
      { pk: "a", sk: 2 },
    ]);
  });

  it("decodes a SQL primary key of any number of columns, whatever the values hold", () => {
    const t = new DuplicateTally(["a", "b", "c"], false, 5);
    const row = ["S1:x", "N12", "S"];
    t.add("Sx", undefined, compositeKeyText(row));
    t.add("Sx", undefined, compositeKeyText(["S", "S", "S:"]));
    expect(compositeKeyText(["Sa", "N1"])).toBe(primaryKeyText("Sa", "N1"));
    expect(compositeKeyText(["Sa"])).toBe("Sa");
    expect(t.summary(1).examples[0]?.primaryKeys).toEqual([
      { a: "1:x", b: 12, c: "" },
      { a: "", b: "", c: ":" },
    ]);
  });
});
