import { describe, expect, it } from "vitest";
import { checkDurable, type DurableCheck } from "../../src/cli/run/durable-checks.js";
import { normalizeSequencer } from "../../src/core/position.js";
import { canonicalJson, durableExecutionName } from "../../src/durable/index.js";
import type { DurableStart, InvokeRecord } from "../../src/local/emulators/lambda-server.js";

/** The checks D1–D3 on made-up starts: each one passes a right history and fails a wrong one. */
let order = 0;
/** A start of S3 event `key@sequencer`, its envelope as the dispatcher builds it (position null: dedupe-only). */
function s3Start(key: string, sequencer: string, options: { ordered?: boolean; nameSuffix?: string } = {}) {
  const subject = `bucket/${key}`;
  const position = normalizeSequencer(sequencer);
  const identity = `${position}:created`;
  const payload = {
    effectivelyOnce: 1,
    execution: {
      executionName: durableExecutionName(subject, identity),
      subject,
      identity,
      position: options.ordered === false ? null : position,
    },
    event: {
      kind: "s3",
      bucket: "bucket",
      key,
      versionId: null,
      sequencer,
      operation: "created",
      size: 1,
      etag: "e",
    },
    detail: null,
  };
  return start(payload.execution.executionName + (options.nameSuffix ?? ""), payload);
}

function messageStart(subject: string, identity: string, position: string | null) {
  const executionName = durableExecutionName(subject, identity);
  return start(executionName, {
    effectivelyOnce: 1,
    execution: { executionName, subject, identity, position },
    event: { kind: "message", body: `${subject}:${identity}` },
    detail: null,
  });
}

function start(name: string, payload: unknown): DurableStart {
  order++;
  return {
    order,
    name,
    named: true,
    functionName: "workflow",
    qualifier: "live",
    arn: `arn:aws:lambda:us-east-1:000000000000:function:workflow:live/durable-execution/${name}/${order}`,
    payload: canonicalJson(payload),
    atMs: order,
  };
}

const invoke = (outcome: InvokeRecord["outcome"], name = "n"): InvokeRecord => ({
  atMs: 0,
  functionName: "workflow",
  qualifier: "live",
  name,
  invocationType: "Event",
  outcome,
  lost: false,
});
const started = (starts: DurableStart[]) => starts.map((s) => invoke("started", s.name));
const byId = (checks: DurableCheck[]) => Object.fromEntries(checks.map((c) => [c.id, c]));
const event = (key: string, sequencer: string, gotThrough = true) => ({
  subject: `bucket/${key}`,
  position: normalizeSequencer(sequencer),
  gotThrough,
});

describe("durable checks D1–D3", () => {
  it("pass a dispatcher's history: once per event, in order per subject, the newest last", () => {
    const starts = [s3Start("a", "0A"), s3Start("b", "0B"), s3Start("a", "0C")];
    const checks = byId(
      checkDurable({
        starts,
        invokes: [...started(starts), invoke("existing")],
        events: [event("a", "0A"), event("b", "0B"), event("a", "0C")],
      }),
    );
    expect(checks.D1).toMatchObject({
      status: "pass",
      detail: expect.stringMatching(/^3 starts for 3 events/),
    });
    expect(checks.D2).toMatchObject({ status: "pass", detail: expect.stringMatching(/^2 subject/) });
    expect(checks.D3?.status).toBe("not checked");
  });

  it("D1 fails an event started twice (two names) and a name sent with another payload", () => {
    const starts = [s3Start("a", "0A"), s3Start("a", "0A", { nameSuffix: "x" })];
    const twice = byId(checkDurable({ starts, invokes: started(starts) }));
    expect(twice.D1?.status).toBe("fail");
    expect(twice.D1?.detail).toMatch(/1 event\(s\) started more than one execution \(bucket\/a/);
    const one = [s3Start("b", "0B")];
    const conflict = byId(
      checkDurable({ starts: one, invokes: [...started(one), invoke("conflict", "late")] }),
    );
    expect(conflict.D1?.status).toBe("fail");
    expect(conflict.D1?.detail).toMatch(/DurableExecutionAlreadyStartedException.*\(late\)/);
  });

  it("D2 fails an older event started after a newer one, and a newest event that never started", () => {
    const starts = [s3Start("a", "0C"), s3Start("a", "0A")];
    const late = byId(checkDurable({ starts, invokes: started(starts) }));
    expect(late.D2?.status).toBe("fail");
    expect(late.D2?.detail).toMatch(/started after 0C/);
    const first = [s3Start("b", "0A")];
    const missing = byId(
      checkDurable({ starts: first, invokes: started(first), events: [event("b", "0A"), event("b", "0D")] }),
    );
    expect(missing.D2?.status).toBe("fail");
    expect(missing.D2?.detail).toMatch(/the last start is at 0A0*, its newest event at 0D0*/);
    // A newest event that never got through is I4's failure, not an ordering one.
    const lost = byId(
      checkDurable({
        starts: first,
        invokes: started(first),
        events: [event("b", "0A"), event("b", "0D", false)],
      }),
    );
    expect(lost.D2).toMatchObject({
      status: "pass",
      detail: expect.stringMatching(/never got through, left to I4/),
    });
  });

  it("D2 orders a dedupe-only dispatcher's S3 starts by their sequencer; positionless messages have no order to keep", () => {
    const starts = [s3Start("a", "0B", { ordered: false }), s3Start("a", "0A", { ordered: false })];
    expect(byId(checkDurable({ starts, invokes: started(starts) })).D2?.status).toBe("fail");
    const messages = [messageStart("order-1", "m1", null), messageStart("order-1", "m2", null)];
    const checks = byId(checkDurable({ starts: messages, invokes: started(messages) }));
    expect(checks.D1?.status).toBe("pass");
    expect(checks.D2).toMatchObject({
      status: "n/a",
      detail: expect.stringMatching(/no start carries a position .*: the dispatcher deduplicates only/),
    });
    const ordered = [messageStart("order-2", "v1", "001"), messageStart("order-2", "v2", "002")];
    expect(byId(checkDurable({ starts: ordered, invokes: started(ordered) })).D2?.status).toBe("pass");
  });

  it("D3 passes executions that all succeeded, fails a failed one and a start that never ran", () => {
    const starts = [s3Start("c", "0A"), s3Start("c", "0B")];
    const ok = starts.map((s) => ({ order: s.order, name: s.name, status: "SUCCEEDED" }));
    expect(byId(checkDurable({ starts, invokes: started(starts), executions: ok })).D3?.status).toBe("pass");
    const failed = ok.map((e, i) => (i === 1 ? { ...e, status: "FAILED", error: "Error: boom" } : e));
    const d3 = byId(checkDurable({ starts, invokes: started(starts), executions: failed })).D3;
    expect(d3).toMatchObject({ status: "fail", detail: expect.stringMatching(/FAILED, Error: boom/) });
    const never = byId(checkDurable({ starts, invokes: started(starts), executions: ok.slice(0, 1) })).D3;
    expect(never).toMatchObject({ status: "fail", detail: expect.stringMatching(/never ran/) });
  });

  it("payloads without an execution envelope (a hand-rolled dispatcher): D1 and D2 not checked, saying why", () => {
    const raw = [start("order-a", { orderId: "o-1" }), start("order-b", { orderId: "o-1" })];
    const checks = byId(checkDurable({ starts: raw, invokes: started(raw) }));
    expect(checks.D1).toMatchObject({
      status: "not checked",
      detail: "none of the 2 starts' payloads names its event (no execution envelope, no S3 event)",
    });
    expect(checks.D2).toMatchObject({
      status: "not checked",
      detail: "none of the 2 starts' payloads names its subject (no execution envelope, no S3 event)",
    });
  });

  it("has nothing to judge without starts, and says why (the refused Invokes)", () => {
    const refused = { ...invoke("rejected"), error: "InvalidParameterValueException: unqualified" };
    const checks = byId(checkDurable({ starts: [], invokes: [refused] }));
    expect(checks.D1).toMatchObject({
      status: "not checked",
      detail: expect.stringMatching(/1 Invoke\(s\) refused/),
    });
    expect(checks.D2?.status).toBe("not checked");
  });
});
