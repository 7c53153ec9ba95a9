import { describe, expect, it } from "vitest";
import type { InvariantCheck } from "../../src/cli/run/invariants.js";
import { buildRunReport, formatRunReport, type RunFindings } from "../../src/cli/run/report.js";
import type { TraceEvent } from "../../src/sim/live/trace.js";

/** A run the runner traced as slow with no fault point reached (the slowness struck after the handler returned). */
const missed = (runId: string): TraceEvent => ({
  type: "run",
  atMs: 0,
  functionName: "f",
  requestId: `req-${runId}`,
  runId,
  status: "succeeded",
  durationMs: 1,
  faults: { failBefore: false, failAfter: false, crash: false, slowMs: 100 },
  faultPointMissed: true,
});

/** A `src/lambda` wrapper's report: one delivery whose events ended with these statuses. */
const wrapperReport = (...statuses: string[]) => ({
  deliveries: [{ recordIndex: 0, events: statuses.map((status) => ({ status })) }],
});

const findings = (events: TraceEvent[], reports: [string, unknown][]): RunFindings => ({
  handler: "h.ts:handler",
  source: "direct",
  seed: 1,
  uploads: 0,
  messages: 0,
  events,
  classified: { perDelivery: [], perEvent: new Map(), detailed: true },
  invariants: [],
  errors: [],
  reports: new Map(reports),
  startedMs: Date.now(),
});

const faultPointWarnings = (f: RunFindings) =>
  buildRunReport(f).warnings.filter((w) => w.includes("faultPoint()"));

describe("eonce run's fault point warning", () => {
  it("is not given for runs whose handler never ran: every event a duplicate or stale", () => {
    const f = findings(
      [missed("dupes"), missed("stale")],
      [
        ["dupes", wrapperReport("duplicate", "duplicate")],
        ["stale", { outcomes: [{ status: "stale" }] }],
      ],
    );
    expect(faultPointWarnings(f)).toEqual([]);
  });

  it("counts the runs whose handler ran (processed, or a plain handler with no report)", () => {
    const f = findings(
      [missed("ran"), missed("plain"), missed("dupes")],
      [
        ["ran", wrapperReport("duplicate", "processed")],
        ["dupes", wrapperReport("duplicate")],
      ],
    );
    const [warning, ...more] = faultPointWarnings(f);
    expect(more).toEqual([]);
    expect(warning).toMatch(
      /^2 run\(s\) drew slowness or a crash but their handler reached no faultPoint\(\)/,
    );
  });

  it("names the package path to import it from, and no version", () => {
    const [warning] = faultPointWarnings(findings([missed("ran")], []));
    expect(warning).toContain('import { faultPoint } from "effectively-once/local"');
    expect(warning).not.toMatch(/\d+\.\d+\.\d+/);
  });
});

describe("eonce run's result line", () => {
  const check = (id: InvariantCheck["id"], status: InvariantCheck["status"]): InvariantCheck => ({
    id,
    title: id,
    status,
    detail: "",
  });
  const resultLine = (invariants: InvariantCheck[]) => {
    const report = buildRunReport({ ...findings([], []), invariants });
    return { report, line: formatRunReport(report).split("\n").at(-1) };
  };

  it("names the checks not made: unknown, not ok", () => {
    const { report, line } = resultLine([
      check("I1", "not checked"),
      check("I2", "n/a"),
      check("I3", "not checked"),
    ]);
    expect(report).toMatchObject({ result: "unknown", ok: false });
    expect(line).toBe("result         unknown: I1, I3 not checked, so not ok (exit 3 under --strict)");
  });

  it("ok when every check that applies passed; n/a leaves it ok", () => {
    const { report, line } = resultLine([check("I1", "pass"), check("I2", "n/a")]);
    expect(report).toMatchObject({ result: "ok", ok: true });
    expect(line).toBe("result         ok");
  });
});
