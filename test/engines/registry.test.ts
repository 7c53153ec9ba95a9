import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { stateEnvironment } from "../../src/cli/run/local-state.js";
import { resolveRunOptions } from "../../src/cli/run/options.js";
import { ResultSerializationError } from "../../src/core/errors.js";
import { serializeStepResult } from "../../src/durable/step-result.js";
import {
  ENGINE_MODES,
  ENGINE_NAMES,
  ENGINES,
  EngineRegistrationError,
  engine,
  INLINE_ENGINE_NAMES,
  inlineAlias,
  MODE_NAMES,
  modeName,
} from "../../src/engines/registry.js";

/*
 * The registry's engines as the tools read them (src/engines/registry.ts): each a folder with its engine.ts and the
 * test suite's factories, the handler variables `eonce run` derives from them, and the limits guarded steps take.
 */

describe("the engines of the registry", () => {
  it("each has its folder's engine.ts (or is the test suite's), and the test kit's factories", () => {
    for (const e of ENGINES) {
      const inPackage = existsSync(`src/engines/${e.folder}/engine.ts`);
      expect(inPackage || existsSync(`test/engines/${e.folder}/engine.ts`), e.name).toBe(true);
      expect(existsSync(`test/engines/${e.folder}/under-test.ts`), e.name).toBe(true);
      if (e.durable && inPackage)
        expect(existsSync(`test/durable/engines/${e.folder}.ts`), e.name).toBe(true);
    }
  });

  it("has one engine per folder, and an inline mode of the same name where the engine keeps state inline", () => {
    expect(new Set(ENGINES.map((e) => e.folder)).size).toBe(ENGINES.length);
    expect(ENGINE_NAMES).toEqual(ENGINES.map((e) => e.name));
    expect(ENGINE_NAMES.some((n) => n.endsWith("-inline"))).toBe(false);
    expect(INLINE_ENGINE_NAMES).toEqual(expect.arrayContaining(["dynamodb", "postgres"]));
    for (const e of ENGINES) {
      expect(e.inline, e.name).toBe(false);
      if (!e.inlineMode) continue;
      expect(e.inlineMode).toMatchObject({ name: e.name, folder: e.folder, inline: true });
      expect(engine(e.name, { inline: true })).toBe(e.inlineMode);
    }
  });

  it("lists every mode for the test kit and the simulator: both modes of the inline engines", () => {
    expect(MODE_NAMES).toEqual(ENGINE_MODES.map(modeName));
    expect(MODE_NAMES).toEqual(
      expect.arrayContaining(["dynamodb", "dynamodb-inline", "postgres", "postgres-inline", "memory"]),
    );
    expect(ENGINE_MODES).toHaveLength(ENGINES.length + INLINE_ENGINE_NAMES.length);
  });

  it("reads the deprecated -inline names as the engine's inline mode", () => {
    expect(inlineAlias("postgres-inline")).toBe("postgres");
    expect(inlineAlias("dynamodb-inline")).toBe("dynamodb");
    expect(inlineAlias("sqlite-inline")).toBeUndefined();
    expect(inlineAlias("postgres")).toBeUndefined();
    expect(engine("postgres-inline")).toBe(engine("postgres", { inline: true }));
    expect(engine("postgres", { inline: false }).inline).toBe(false);
  });

  it("refuses the inline mode of an engine without one", () => {
    expect(() => engine("sqlite", { inline: true })).toThrow(/the sqlite engine has no inline mode/);
  });

  it("names an unknown engine's error after the names it has", () => {
    expect(() => engine("nope")).toThrow(EngineRegistrationError);
    expect(() => engine("nope")).toThrow(/no engine named nope \(dynamodb, memory, /);
  });
});

describe("eonce run's handler variables, from the engine's env", () => {
  const env = (o: Omit<Parameters<typeof resolveRunOptions>[0], "handler">) =>
    stateEnvironment(resolveRunOptions({ handler: "h.ts:handler", generate: 1, ...o }));

  it("sets each given connection option's variable, as each engine names it", () => {
    expect(env({ stateTable: "t" })).toEqual({ STATE_TABLE: "t" });
    expect(env({ stateStore: "postgres", databaseUrl: "postgres://h/db", schema: "s" })).toEqual({
      DATABASE_URL: "postgres://h/db",
      STATE_SCHEMA: "s",
    });
    expect(env({ stateStore: "sqlite", stateFile: "state.db" })).toEqual({ STATE_FILE: "state.db" });
    expect(env({ stateStore: "valkey", stateUrl: "redis://h:6379", keyPrefix: "p:" })).toEqual({
      VALKEY_URL: "redis://h:6379",
      STATE_KEY_PREFIX: "p:",
    });
    expect(env({ stateStore: "postgres", inline: true, stateTable: "photos" })).toEqual({
      STATE_TABLE: "photos",
    });
    expect(env({})).toEqual({});
  });
});

describe("a guarded step's result, capped by its engine's limit", () => {
  it("refuses a result over the limit it is given, and takes one at it", () => {
    expect(serializeStepResult("abcdefgh", 10)).toBe('"abcdefgh"');
    expect(() => serializeStepResult("abcdefghi", 10)).toThrow(ResultSerializationError);
    expect(() => serializeStepResult("abcdefghi", 10)).toThrow(/exceeds 10 bytes/);
  });
});
