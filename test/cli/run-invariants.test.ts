import { describe, expect, it } from "vitest";
import { checkInvariants, type RunCheck } from "../../src/cli/run/invariants.js";
import { messageEffectKey } from "../../src/cli/run/messages.js";
import type { Classified, DeliveryOutcome } from "../../src/cli/run/outcomes.js";
import { runExitCode, strictByDefault, verdict } from "../../src/cli/run/report.js";
import type { RunState } from "../../src/cli/run/state.js";
import { OptionsError } from "../../src/core/errors.js";
import { normalizeSequencer } from "../../src/core/position.js";
import type { StateRecord } from "../../src/core/state.js";

/*
 * `eonce run`'s invariant checks on what a run found (the spawned runs are in test/local/run-command.test.ts and
 * run-truth.test.ts): when I1 has nothing to judge, and how I2 and I3 read the state an engine's admin listed.
 */

const BUCKET = "in";
const SINCE_MS = Date.UTC(2026, 0, 1);

/** One event per key, each with these delivery outcomes; `detailed`: the handler reported per-event statuses. */
function classified(events: Record<string, { seq: string; outcomes: DeliveryOutcome[] }>, detailed = true) {
  const perEvent: Classified["perEvent"] = new Map();
  for (const [key, e] of Object.entries(events))
    perEvent.set(`req-${key}`, { id: `req-${key}`, key, sequencer: e.seq, outcomes: e.outcomes });
  return { perDelivery: [...perEvent.values()].flatMap((e) => e.outcomes), perEvent, detailed };
}

/** A record of subject `in/<key>`, last claimed `claimedMs` (its fence is that time's), committed at `seq`. */
function record(key: string, status: StateRecord["status"], seq: string, claimedMs = SINCE_MS + 1000) {
  return {
    key: `o#${BUCKET}/${key}`,
    status,
    position: normalizeSequencer(seq),
    identity: `${seq}:created`,
    fence: claimedMs * 1000,
    attempts: 0,
    ...(status === "done" ? { committedPosition: normalizeSequencer(seq) } : {}),
  } as StateRecord;
}

const state = (records: StateRecord[], byRow = false): RunState => ({
  where: "postgres public.eonce_state",
  records,
  byRow,
  sinceMs: SINCE_MS,
});

const checks = (inputs: Parameters<typeof checkInvariants>[0]) =>
  Object.fromEntries(checkInvariants(inputs).map((c) => [c.id, c]));

describe("I1 has something to judge only when some event was processed", () => {
  it("no event at all: not checked, and says why", () => {
    const { I1 } = checks({ classified: classified({}), bucket: BUCKET });
    expect(I1).toMatchObject({
      status: "not checked",
      detail: "no event was processed: there were no events",
    });
    const withEffects = checks({
      classified: classified({}, false),
      effects: { table: "rows", attribute: "sequencer", rows: [] },
    });
    expect(withEffects.I1?.status).toBe("not checked");
  });

  it("events, none reported processed and no effect row: not checked", () => {
    const { I1 } = checks({
      classified: classified({ a: { seq: "01", outcomes: ["failed-will-retry", "failed"] } }),
      bucket: BUCKET,
    });
    expect(I1).toMatchObject({
      status: "not checked",
      detail: "no event was processed: none of the 1 events was reported processed",
    });
  });

  it("one processed event: judged (pass), and a twice-processed one fails", () => {
    const once = checks({ classified: classified({ a: { seq: "01", outcomes: ["processed"] } }) });
    expect(once.I1?.status).toBe("pass");
    const twice = checks({
      classified: classified({ a: { seq: "01", outcomes: ["processed", "processed"] } }),
    });
    expect(twice.I1?.status).toBe("fail");
  });
});

describe("I2 and I3 read the records the engine's admin listed", () => {
  const events = classified({
    a: { seq: "02", outcomes: ["processed"] },
    b: { seq: "03", outcomes: ["duplicate"] },
  });

  it("each subject committed at its newest event and none held: pass, naming the store", () => {
    const { I2, I3 } = checks({
      classified: events,
      bucket: BUCKET,
      state: state([record("a", "done", "02"), record("b", "done", "03")]),
    });
    expect(I2).toMatchObject({ status: "pass" });
    expect(I2?.detail).toBe(
      "2 ordered subjects, each committed at its newest event (of those acknowledged) in postgres public.eonce_state",
    );
    expect(I3).toMatchObject({
      status: "pass",
      detail: "2 state records, none still claimed in postgres public.eonce_state",
    });
  });

  it("a subject committed at an older event fails I2; one left running fails I3", () => {
    const { I2, I3 } = checks({
      classified: events,
      bucket: BUCKET,
      state: state([record("a", "done", "01"), record("b", "running", "03")]),
    });
    expect(I2?.status).toBe("fail");
    expect(I2?.detail).toMatch(
      /^2 subject\(s\) whose committed position is older than their newest event \(in\/a\)/,
    );
    expect(I3?.status).toBe("fail");
    expect(I3?.detail).toMatch(/^1 subject\(s\) still claimed by a run that never finished \(o#in\/b\)/);
  });

  it("I3 leaves out records last claimed before the run (a store that outlives runs)", () => {
    const { I3 } = checks({
      classified: events,
      bucket: BUCKET,
      state: state([record("a", "done", "02"), record("old", "running", "01", SINCE_MS - 60_000)]),
    });
    expect(I3).toMatchObject({
      status: "pass",
      detail:
        "1 state records, none still claimed in postgres public.eonce_state; 1 record(s) last claimed before this " +
        "run not counted",
    });
  });

  it("records named by row (a custom --row-key without its inverse): I2 not checked, I3 still read", () => {
    const { I2, I3 } = checks({
      classified: events,
      bucket: BUCKET,
      state: state([record("a", "done", "02")], true),
    });
    expect(I2).toMatchObject({ status: "not checked" });
    expect(I2?.detail).toMatch(/--row-key without --row-key-inverse/);
    expect(I3?.status).toBe("pass");
  });

  it("a state that cannot be read fails both, with the engine's error", () => {
    const unread: RunState = { where: "sqlite /tmp/x.db", error: "no SQLite database at /tmp/x.db" };
    const { I2, I3 } = checks({ classified: events, bucket: BUCKET, state: unread });
    for (const check of [I2, I3])
      expect(check).toMatchObject({
        status: "fail",
        detail: "cannot read the guard's state (sqlite /tmp/x.db): no SQLite database at /tmp/x.db",
      });
  });

  it("no state named: not checked, and says which flags read it", () => {
    const { I2, I3 } = checks({ classified: events, bucket: BUCKET });
    for (const check of [I2, I3])
      expect(check).toMatchObject({
        status: "not checked",
        detail: "pass --state-table or --state-store to read the guard's state",
      });
  });
});

describe("a state that holds nothing of the run's events fails I2 and I3 (the run looks in the wrong place)", () => {
  const processed = classified({ a: { seq: "02", outcomes: ["processed"] } });

  it("processed events and no record: both fail, naming where the run looked", () => {
    const { I2, I3 } = checks({ classified: processed, bucket: BUCKET, state: state([]) });
    for (const check of [I2, I3])
      expect(check).toMatchObject({
        status: "fail",
        detail:
          "no state record of this run in postgres public.eonce_state, though 1 event(s) processed: the run reads " +
          "another place than the handler writes to (its --state-store, --state-table, --schema, --state-file or " +
          "--key-prefix)",
      });
  });

  it("records of earlier runs only: fails too, and says so", () => {
    const old = record("a", "done", "01", SINCE_MS - 60_000);
    const { I3 } = checks({ classified: processed, bucket: BUCKET, state: state([old]) });
    expect(I3?.status).toBe("fail");
    expect(I3?.detail).toMatch(
      /^no state record of this run in .* \(1 record\(s\) of earlier runs only\), though/,
    );
  });

  it("a plain handler's acknowledged events count; events none of which was processed need no record", () => {
    const plain = classified({ a: { seq: "02", outcomes: ["acknowledged"] } }, false);
    expect(checks({ classified: plain, bucket: BUCKET, state: state([]) }).I3?.detail).toMatch(
      /though 1 event\(s\) acknowledged/,
    );
    const duplicates = classified({ a: { seq: "02", outcomes: ["duplicate"] } });
    const { I2, I3 } = checks({ classified: duplicates, bucket: BUCKET, state: state([]) });
    expect([I2?.status, I3?.status]).toEqual(["pass", "pass"]);
  });

  it("message runs: I3 fails the same way; I2 does not apply (the handler's positions)", () => {
    const messages = classified({ "m.jsonl:1": { seq: "", outcomes: ["processed"] } });
    const { I2, I3 } = checks({ classified: messages, state: state([]) });
    expect(I2).toMatchObject({ status: "n/a" });
    expect(I3?.status).toBe("fail");
  });
});

describe("I1 counts effect rows per event, per message key, per step", () => {
  /** Two messages of order o-1 (a resend) and one of o-2, each processed once by event id. */
  const messages = () => {
    const perEvent: Classified["perEvent"] = new Map();
    for (const n of [1, 2, 3]) perEvent.set(`m${n}`, { id: `m${n}`, key: `f:${n}`, outcomes: ["processed"] });
    return {
      perDelivery: ["processed", "processed", "processed"] as DeliveryOutcome[],
      perEvent,
      detailed: true,
    };
  };
  const keys = new Map([
    ["m1", "o-1"],
    ["m2", "o-1"],
    ["m3", "o-2"],
  ]);
  const effects = (rows: Record<string, unknown>[], step?: string) => ({
    table: "charges",
    attribute: "orderId",
    step,
    rows,
    keys,
  });

  it("messages sharing a key are one event: one row each passes", () => {
    const { I1 } = checks({
      classified: messages(),
      effects: effects([{ orderId: "o-1" }, { orderId: "o-2" }]),
    });
    expect(I1).toMatchObject({
      status: "pass",
      detail: expect.stringMatching(/charges: 2 rows for 2 events$/),
    });
  });

  it("a second row of a key fails; a key without a row fails", () => {
    const { I1 } = checks({
      classified: messages(),
      effects: effects([{ orderId: "o-1" }, { orderId: "o-1" }]),
    });
    expect(I1?.status).toBe("fail");
    expect(I1?.detail).toBe(
      "1 event(s) with more than one row in charges (f:1); 1 event(s) without a row in charges (f:3); " +
        "processed reported once or less for 3/3 events; charges: 2 rows for 2 events",
    );
  });

  it("with a step attribute, one row per (event, step): two steps pass, one step twice fails", () => {
    const steps = (list: [string, string][]) => list.map(([orderId, step]) => ({ orderId, step }));
    const once = checks({
      classified: messages(),
      effects: effects(
        steps([
          ["o-1", "charge"],
          ["o-1", "receipt"],
          ["o-2", "charge"],
          ["o-2", "receipt"],
        ]),
        "step",
      ),
    });
    expect(once.I1).toMatchObject({
      status: "pass",
      detail: expect.stringMatching(/charges: 4 rows for 2 events \(counted per step\)$/),
    });
    const twice = checks({
      classified: messages(),
      effects: effects(
        steps([
          ["o-1", "charge"],
          ["o-1", "charge"],
          ["o-2", "charge"],
        ]),
        "step",
      ),
    });
    expect(twice.I1?.status).toBe("fail");
    expect(twice.I1?.detail).toMatch(/^1 event\(s\) with more than one row for one step in charges \(f:1\)/);
  });
});

describe("the run's result: ok only when every check that applies ran and passed", () => {
  const c = (id: string, status: RunCheck["status"]): RunCheck => ({ id, title: id, status, detail: "" });

  it("a check not made makes it unknown; one that does not apply (n/a) does not; a failure wins", () => {
    expect(verdict([c("I1", "pass"), c("I2", "n/a")], 0)).toEqual({ result: "ok", ok: true });
    expect(verdict([c("I1", "not checked"), c("I2", "pass")], 0)).toEqual({ result: "unknown", ok: false });
    expect(verdict([c("I1", "not checked"), c("D1", "fail")], 0).result).toBe("fail");
    expect(verdict([c("I1", "pass")], 1).result).toBe("fail");
  });

  it("exit codes: 0 ok, 1 fail, 3 unknown under --strict (else 0); --strict is the default when CI is set", () => {
    expect(runExitCode({ result: "ok" }, true)).toBe(0);
    expect(runExitCode({ result: "fail" }, false)).toBe(1);
    expect(runExitCode({ result: "unknown" }, true)).toBe(3);
    expect(runExitCode({ result: "unknown" }, false)).toBe(0);
    expect(strictByDefault({ CI: "true" })).toBe(true);
    expect(strictByDefault({ CI: "1" })).toBe(true);
    expect(strictByDefault({})).toBe(false);
    expect(strictByDefault({ CI: "false" })).toBe(false);
    expect(strictByDefault({ CI: "" })).toBe(false);
  });
});

describe("--effects for messages: a message's key is its body's field", () => {
  const message = (body: string) => ({ label: "orders.jsonl:2", body });

  it("a string or number field is the key; messages without it are refused, naming the line", () => {
    expect(messageEffectKey(message('{"orderId":"o-1"}'), "orderId")).toBe("o-1");
    expect(messageEffectKey(message('{"orderId":7}'), "orderId")).toBe("7");
    for (const body of ['{"id":"o-1"}', '{"orderId":{"x":1}}', "not json", '"orderId"'])
      expect(() => messageEffectKey(message(body), "orderId")).toThrow(
        new OptionsError(
          'orders.jsonl:2: --effects matches rows to a message by its body\'s "orderId", and this body has no ' +
            'string or number "orderId"',
        ),
      );
    // Own fields only: the field name is a command-line argument.
    expect(() => messageEffectKey(message("{}"), "constructor")).toThrow(OptionsError);
  });
});
