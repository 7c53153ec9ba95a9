import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidPositionError } from "../../src/core/errors.js";
import {
  assertPosition,
  MAX_SEQUENCE_NUMBER_DIGITS,
  positionFromSequenceNumber,
} from "../../src/core/position.js";

/** Decimal strings of 1..129 significant digits, sometimes with leading zeros (DynamoDB Local pads them). */
const digits = (max: number) =>
  fc
    .array(fc.constantFrom(..."0123456789".split("")), { minLength: 1, maxLength: max })
    .map((d) => d.join(""));
const sequenceNumber = fc.oneof(
  digits(MAX_SEQUENCE_NUMBER_DIGITS),
  fc.tuple(fc.integer({ min: 1, max: 10 }), digits(40)).map(([zeros, d]) => "0".repeat(zeros) + d),
  fc.bigInt({ min: 0n, max: 10n ** 129n - 1n }).map(String),
);

describe("positionFromSequenceNumber", () => {
  it("orders positions as the numbers they encode (string order = numeric order)", () => {
    fc.assert(
      fc.property(sequenceNumber, sequenceNumber, (a, b) => {
        const [x, y] = [BigInt(a), BigInt(b)];
        const [pa, pb] = [positionFromSequenceNumber(a), positionFromSequenceNumber(b)];
        expect(pa < pb ? -1 : pa > pb ? 1 : 0).toBe(x < y ? -1 : x > y ? 1 : 0);
      }),
      { numRuns: 3000 },
    );
  });

  it("is one-to-one on numbers, and the digits after the 3-digit length are the number (round trip)", () => {
    fc.assert(
      fc.property(sequenceNumber, (s) => {
        const p = positionFromSequenceNumber(s);
        assertPosition(p);
        expect(Number(p.slice(0, 3))).toBe(p.length - 3);
        expect(BigInt(p.slice(3))).toBe(BigInt(s));
        expect(positionFromSequenceNumber(p.slice(3))).toBe(p);
      }),
    );
  });

  it("orders the real examples numerically where their strings do not", () => {
    // Kinesis, from the Lambda guide; then a shorter number that string order would put after it.
    const kinesis = "49590338271490256608559692538361571095921575989136588898";
    expect("9" > kinesis).toBe(true);
    expect(positionFromSequenceNumber("9") < positionFromSequenceNumber(kinesis)).toBe(true);
    expect(positionFromSequenceNumber("000000000000000000010") > positionFromSequenceNumber("9")).toBe(true);
    expect(positionFromSequenceNumber("0")).toBe("0010");
  });

  it("refuses anything but decimal digits, and more than 129 significant digits, with InvalidPositionError", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }).filter((s) => !/^\d+$/.test(s)),
        (bad) => {
          expect(() => positionFromSequenceNumber(bad)).toThrow(InvalidPositionError);
        },
      ),
    );
    const tooLong = `1${"0".repeat(MAX_SEQUENCE_NUMBER_DIGITS)}`;
    for (const bad of ["", "-1", "1.5", "1e3", " 1", "١٢", tooLong, 12, null, undefined]) {
      expect(() => positionFromSequenceNumber(bad as string)).toThrow(InvalidPositionError);
    }
    expect(() => positionFromSequenceNumber("9".repeat(MAX_SEQUENCE_NUMBER_DIGITS))).not.toThrow();
  });
});
