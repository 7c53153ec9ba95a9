import { describe, expect, it } from "vitest";
import { describeLoadError, moduleTypeHint } from "../../src/cli/run/errors.js";

describe("a handler that cannot load says what to change", () => {
  it.each([
    ["Cannot require() ES Module /app/h.ts in a cycle.", undefined],
    ["require() of ES Module /app/h.ts not supported.", undefined],
    ["unexpected", "ERR_REQUIRE_ASYNC_MODULE"],
    ["Cannot use import statement outside a module", undefined],
  ])("ES module code loaded as CommonJS (%s %s): add type module", (message, code) => {
    const error = Object.assign(new Error(message), code ? { code } : {});
    expect(describeLoadError(error, "h.ts")).toMatch(/add "type": "module" to your package\.json/);
  });

  it("says nothing of module types for other errors", () => {
    expect(moduleTypeHint(new Error("Cannot find module 'left-pad'"))).toBe("");
    expect(describeLoadError(new Error("boom"), "h.ts")).not.toMatch(/type/);
  });
});
