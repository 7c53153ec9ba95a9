import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeError, describeText, describeValue, MAX_ECHO } from "../../src/core/describe-value.js";

/** Longest rendering: MAX_ECHO characters of content, quotes, the ellipsis and "(N characters)". */
const LIMIT = MAX_ECHO + 40;

function nested(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

describe("describeValue", () => {
  it("renders small values like JSON", () => {
    expect(describeValue("XYZ")).toBe('"XYZ"');
    expect(describeValue(42)).toBe("42");
    expect(describeValue(null)).toBe("null");
    expect(describeValue(undefined)).toBe("undefined");
    expect(describeValue({ a: [1, "b"] })).toBe('{"a":[1,"b"]}');
  });

  it("survives nesting deeper than JSON.stringify can go", () => {
    const deep = nested(200_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(describeValue(deep)).toBe('[{"a":[{…}]}]');
  });

  it("survives cycles, getters, revoked proxies and values with no primitive conversion", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    let called = false;
    const getter = {
      get x() {
        called = true;
        throw new Error("getter ran");
      },
    };
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(describeValue(cyclic)).toMatch(/^\{"a":1,"self":\{"a":1,/);
    expect(describeValue(getter)).toBe('{"x":[getter]}');
    expect(called).toBe(false);
    expect(describeValue(revoked.proxy)).toBe("an object");
    expect(describeValue({ toString: 1 })).toBe('{"toString":1}');
    expect(describeValue(Object.create(null))).toBe("{}");
    expect(describeValue(Symbol("s"))).toBe("a symbol");
    expect(describeValue(new Date(0))).toBe("an object");
  });

  it("caps long strings and names their original length", () => {
    const text = describeValue("A".repeat(200_000));
    expect(text.length).toBeLessThanOrEqual(LIMIT);
    expect(text).toMatch(/^"A+…" \(200000 characters\)$/);
  });

  it("stays on one line and never ends in half a surrogate pair", () => {
    expect(describeValue("a\nb\r\u2028\u0085")).toBe('"a\\nb\\r\\u2028\\u0085"');
    const emoji = describeValue("😀".repeat(200));
    expect(emoji).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(describeValue({ k: "😀".repeat(200), l: 1 })).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it("never throws and stays short and on one line, whatever the value (property)", () => {
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withMap: true, withSet: true, withDate: true }),
        (value) => {
          const text = describeValue(value);
          expect(text.length).toBeLessThanOrEqual(LIMIT);
          expect(text).not.toMatch(/[\n\r\u2028\u2029]/);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("describeText and describeError", () => {
  it("put a multi-line message on one line, capped", () => {
    expect(describeText('Unexpected token, "{\n x" is not valid JSON')).toBe(
      'Unexpected token, "{\\n x" is not valid JSON',
    );
    expect(describeText("x".repeat(5_000), 100)).toMatch(/^x{100}… \(5000 characters\)$/);
  });

  it("describe what was thrown without String() (which throws for Object.create(null))", () => {
    const weird = Object.create(null);
    expect(() => String(weird)).toThrow(TypeError);
    expect(describeError(weird)).toBe("{}");
    expect(describeError(new Error("a\nb"))).toBe("a\\nb");
  });
});
