import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SubjectTooLongError } from "../../src/core/errors.js";
import { MalformedKeyError } from "../../src/core/key-text.js";
import { inlineRowKey, stateKey, stateKeyOfInlineRow } from "../../src/core/state-key.js";
import { adversarialText } from "../kit/adversarial.js";

/** An event as the state key sees it: ordered events are one per subject, so their identity does not count. */
const event = fc.record({ subject: adversarialText(), identity: adversarialText(), ordered: fc.boolean() });
type Event = { subject: string; identity: string; ordered: boolean };
const sameItem = (a: Event, b: Event) =>
  a.subject === b.subject && a.ordered === b.ordered && (a.ordered || a.identity === b.identity);

/** The key, or undefined past the size limit or outside the key rule (a typed error, not a key). */
function keyOf(e: Event): string | undefined {
  try {
    return stateKey(e.subject, e.identity, e.ordered);
  } catch (error) {
    if (error instanceof SubjectTooLongError || error instanceof MalformedKeyError) return undefined;
    throw error;
  }
}

describe("state keys and inline rows are one-to-one over arbitrary strings", () => {
  it("two events share a state key only when they share a state item", () => {
    fc.assert(
      fc.property(event, event, (a, b) => {
        const [ka, kb] = [keyOf(a), keyOf(b)];
        fc.pre(ka !== undefined && kb !== undefined);
        expect(ka === kb).toBe(sameItem(a, b));
      }),
      { numRuns: 5000 },
    );
  });

  it("two events share an inline row only when they share a state item; the row inverts to its key", () => {
    fc.assert(
      fc.property(event, event, (a, b) => {
        const [ka, kb] = [keyOf(a), keyOf(b)];
        fc.pre(ka !== undefined && kb !== undefined);
        const [ra, rb] = [inlineRowKey(ka as string), inlineRowKey(kb as string)];
        expect(ra === rb).toBe(sameItem(a, b));
        expect(stateKeyOfInlineRow(ra)).toBe(ka);
        expect(Buffer.byteLength(ra)).toBeLessThanOrEqual(Buffer.byteLength(ka as string));
      }),
      { numRuns: 5000 },
    );
  });

  it("an ordered subject spelled like an unordered event's key gets a row of its own", () => {
    fc.assert(
      // Within the key rule (src/core/key-text.ts): stateKey refuses the rest.
      fc.property(
        adversarialText({ storable: true }),
        adversarialText({ storable: true }),
        (subject, identity) => {
          const unordered = stateKey(subject, identity, false);
          const ordered = stateKey(unordered, "", true);
          expect(inlineRowKey(ordered)).not.toBe(inlineRowKey(unordered));
        },
      ),
    );
    // The case that shared a row before: the subject `u#6#acct-1evt-9` and the event (acct-1, evt-9).
    expect(inlineRowKey(stateKey("u#6#acct-1evt-9", "", true))).toBe("u#o#6#acct-1evt-9");
    expect(inlineRowKey(stateKey("acct-1", "evt-9", false))).toBe("u#6#acct-1evt-9");
  });

  it("keeps the rows users already have: a subject not starting with u# is its own row", () => {
    fc.assert(
      fc.property(adversarialText({ storable: true }), (subject) => {
        fc.pre(!subject.startsWith("u#"));
        expect(inlineRowKey(stateKey(subject, "", true))).toBe(subject);
      }),
    );
  });
});
