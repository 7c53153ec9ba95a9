import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidSequencerError } from "../../src/core/errors.js";
import {
  compareSequencers,
  normalizeSequencer,
  positionFromNumber,
  SEQUENCER_WIDTH,
  toPosition,
} from "../../src/core/position.js";

const hexDigit = fc.constantFrom(..."0123456789abcdefABCDEF".split(""));
const sequencer = fc.array(hexDigit, { minLength: 1, maxLength: SEQUENCER_WIDTH }).map((d) => d.join(""));

/** The numeric value S3 means: the hex string right-padded with zeros to the common width. */
const paddedValue = (s: string) => BigInt(`0x${s.padEnd(SEQUENCER_WIDTH, "0")}`);

describe("sequencer positions", () => {
  it("order equals the numeric order of the right-padded value", () => {
    fc.assert(
      fc.property(sequencer, sequencer, (a, b) => {
        const byValue = paddedValue(a) < paddedValue(b) ? -1 : paddedValue(a) > paddedValue(b) ? 1 : 0;
        expect(Math.sign(compareSequencers(a, b))).toBe(byValue);
      }),
      { numRuns: 2000 },
    );
  });

  it("normalizes to upper-case fixed width and is idempotent", () => {
    fc.assert(
      fc.property(sequencer, (s) => {
        const n = normalizeSequencer(s);
        expect(n).toHaveLength(SEQUENCER_WIDTH);
        expect(n).toBe(n.toUpperCase());
        expect(normalizeSequencer(n)).toBe(n);
      }),
    );
  });

  it("treats differently-long sequencers as S3 does: 0055AED6DCD90281E5 < 0055AED6DCD90281E6 and 1 > 0F", () => {
    expect(compareSequencers("0055AED6DCD90281E5", "0055AED6DCD90281E6")).toBeLessThan(0);
    // Right-padding, not left-padding: "1" means 0x10… and is greater than "0F" (0x0F…).
    expect(compareSequencers("1", "0F")).toBeGreaterThan(0);
    expect(compareSequencers("00A", "00a0")).toBe(0);
  });

  it("rejects non-hex, empty, too long and non-string sequencers with a typed error", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^[0-9a-fA-F]+$/.test(s)),
        (bad) => {
          expect(() => normalizeSequencer(bad)).toThrow(InvalidSequencerError);
        },
      ),
    );
    for (const bad of ["", "F".repeat(SEQUENCER_WIDTH + 1), 12, null]) {
      expect(() => normalizeSequencer(bad)).toThrow(InvalidSequencerError);
    }
  });
});

describe("numeric positions", () => {
  it("string order equals numeric order up to 2^64-1", () => {
    const big = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    fc.assert(
      fc.property(big, big, (a, b) => {
        const pa = positionFromNumber(a);
        const pb = positionFromNumber(b);
        expect(pa < pb).toBe(a < b);
        expect(pa === pb).toBe(a === b);
      }),
    );
  });

  it("dates order by time", () => {
    const date = fc.date({ min: new Date(0), max: new Date("2200-01-01"), noInvalidDate: true });
    fc.assert(
      fc.property(date, date, (a, b) => {
        expect(toPosition(a) < toPosition(b)).toBe(a.getTime() < b.getTime());
      }),
    );
  });
});
