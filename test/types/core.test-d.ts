import { describe, expectTypeOf, it } from "vitest";
import {
  type ApplyContext,
  createGuard,
  type Guard,
  type GuardContext,
  type GuardOptions,
  type GuardOutcome,
  type GuardOutcomeStatus,
} from "../../src/core/guard.js";
import { boolean, integer, oneOf, type Resolved, schemaFor, string } from "../../src/core/options.js";
import type { Position } from "../../src/core/position.js";
import type { StateRecord } from "../../src/core/state.js";
import { MemoryStore } from "../../src/engines/memory/store.js";

/** Compile-time only (vitest typecheck): the guard's outcome and options types, and schemaFor. */

const store = new MemoryStore();
const event = { subject: "bucket/key", identity: "1:created" };

describe("GuardOutcome", () => {
  it("narrows by status", () => {
    const outcome = {} as GuardOutcome<{ n: number }>;
    expectTypeOf(outcome.status).toEqualTypeOf<GuardOutcomeStatus>();
    switch (outcome.status) {
      case "processed":
        expectTypeOf(outcome.result).toEqualTypeOf<{ n: number }>();
        expectTypeOf(outcome.fence).toBeNumber();
        expectTypeOf(outcome.attempt).toBeNumber();
        break;
      case "duplicate":
        expectTypeOf(outcome.result).toEqualTypeOf<{ n: number } | undefined>();
        break;
      case "stale":
        expectTypeOf(outcome.position).toEqualTypeOf<Position | undefined>();
        expectTypeOf(outcome.current).toEqualTypeOf<Position>();
        break;
      case "conflict":
        expectTypeOf(outcome.fingerprint).toBeString();
        expectTypeOf(outcome.committedFingerprint).toBeString();
        break;
      case "busy":
        expectTypeOf(outcome.holder).toEqualTypeOf<Position>();
        break;
      case "in-flight":
        expectTypeOf(outcome).toEqualTypeOf<{ status: "in-flight" }>();
        break;
      case "lease-lost":
        expectTypeOf(outcome.reason).toEqualTypeOf<"superseded" | "expired">();
        expectTypeOf(outcome.current).toEqualTypeOf<StateRecord | undefined>();
        break;
      case "failed":
        expectTypeOf(outcome.error).toBeUnknown();
        expectTypeOf(outcome.released).toBeBoolean();
        break;
      case "unconfirmed":
        expectTypeOf(outcome.phase).toEqualTypeOf<"claim" | "commit" | "release">();
        break;
      default:
        expectTypeOf(outcome).toBeNever();
    }
  });

  it("has no result before narrowing, and no made-up status", () => {
    const outcome = {} as GuardOutcome<string>;
    // @ts-expect-error only processed and duplicate carry a result
    expectTypeOf(outcome.result).toBeString();
    // @ts-expect-error not a status
    expectTypeOf(outcome.status === "skipped").toBeBoolean();
  });
});

describe("createGuard", () => {
  it("takes GuardOptions with only the store required; run infers the result type", () => {
    const guard = createGuard({ store });
    expectTypeOf(guard).toEqualTypeOf<Guard>();
    expectTypeOf(createGuard).parameter(0).toEqualTypeOf<GuardOptions>();
    const run = guard.run(event, async (ctx) => {
      expectTypeOf(ctx).toEqualTypeOf<GuardContext>();
      expectTypeOf(ctx.effectKey).toEqualTypeOf<(name: string) => string>();
      return ctx.fence;
    });
    expectTypeOf(run).resolves.toEqualTypeOf<GuardOutcome<number>>();
    const applied = guard.apply(event, (ctx) => {
      expectTypeOf(ctx).toEqualTypeOf<ApplyContext>();
      expectTypeOf(ctx.effectKey).toEqualTypeOf<(name: string) => string>();
      return "ok";
    });
    expectTypeOf(applied).resolves.toEqualTypeOf<GuardOutcome<string>>();
  });

  it("rejects missing, unknown and mistyped options", () => {
    // @ts-expect-error store is required
    createGuard({ leaseMs: 1_000 });
    // @ts-expect-error an unknown key in literal options (a typo of heartbeatMs)
    createGuard({ store, heartBeatMs: 100 });
    // @ts-expect-error busy is a policy name
    createGuard({ store, busy: "spin" });
    // @ts-expect-error leaseMs is a number
    createGuard({ store, leaseMs: "30s" });
    // @ts-expect-error a handler must return a promise
    createGuard({ store }).run(event, () => 1);
  });
});

describe("schemaFor", () => {
  interface Options {
    size: number;
    mode?: "a" | "b";
    label?: string;
  }
  const fields = {
    size: integer({ min: 1, default: 10 }),
    mode: oneOf(["a", "b"]),
    label: string(),
  };

  it("accepts a schema with exactly the type's keys, and resolves to their types", () => {
    const schema = schemaFor<Options>()(fields);
    expectTypeOf<Resolved<typeof schema>>().toEqualTypeOf<{
      size: number;
      mode: "a" | "b" | undefined;
      label: string | undefined;
    }>();
  });

  it("rejects a missing key, an extra key and a field of the wrong type", () => {
    // @ts-expect-error label is missing
    schemaFor<Options>()({ size: fields.size, mode: fields.mode });
    // @ts-expect-error verbose is not an option
    schemaFor<Options>()({ ...fields, verbose: boolean() });
    // @ts-expect-error size is a number, not a string
    schemaFor<Options>()({ ...fields, size: string() });
  });
});
