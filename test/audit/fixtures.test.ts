import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RULES } from "../../src/audit/index.js";
import { auditTemplateFile } from "../../src/cli/audit-template.js";

const fixtures = fileURLToPath(new URL("../fixtures/audit/", import.meta.url));

/** Each hand-broken template and exactly the findings (rule and resource) it must produce, counted and suppressed. */
const CASES: { file: string; exitCode: 0 | 1; findings: string[]; suppressed?: string[] }[] = [
  { file: "sqs-visibility-6x.yaml", exitCode: 1, findings: ["sqs-visibility-6x OrdersQueue"] },
  { file: "sqs-visibility-1.3x.json", exitCode: 1, findings: ["sqs-visibility-1.3x Queue"] },
  { file: "sqs-no-dlq.yaml", exitCode: 1, findings: ["sqs-no-dlq JobsQueue"] },
  { file: "sqs-max-receive-count.json", exitCode: 1, findings: ["sqs-max-receive-count PaymentsQueue"] },
  {
    file: "stream-batch-failures.yaml",
    exitCode: 1,
    findings: ["batch-item-failures ClicksSource", "batch-item-failures ProfilesSource"],
  },
  {
    file: "stream-defaults.yaml",
    exitCode: 1,
    findings: [
      "stream-bisect ClicksSource",
      "stream-no-on-failure ClicksSource",
      "stream-starting-latest ClicksSource",
      "stream-unbounded-record-age ClicksSource",
      "stream-unbounded-retries ClicksSource",
    ],
  },
  {
    file: "dynamodb-stream-window.json",
    exitCode: 1,
    findings: ["stream-tumbling-window OrdersSource", "stream-unbounded-retries OrdersSource"],
  },
  { file: "fifo-no-dedup.json", exitCode: 0, findings: ["fifo-content-dedup LedgerQueue"] },
  { file: "s3-no-guard-table.yaml", exitCode: 1, findings: ["s3-no-guard-table Uploads"] },
  {
    file: "s3-sequencer-lock.yaml",
    exitCode: 1,
    findings: ["async-no-on-failure ProcessObject", "hand-made-lock-table ObjectLocks"],
  },
  {
    file: "suppressed-cdk-nag.json",
    exitCode: 0,
    findings: [],
    suppressed: ["s3-no-guard-table UploadsNotifications"],
  },
  {
    file: "suppressed-cfn-lint.yaml",
    exitCode: 0,
    findings: [],
    suppressed: ["fifo-content-dedup LedgerQueue", "s3-no-guard-table Uploads"],
  },
  { file: "s3-lambda-no-on-failure.json", exitCode: 1, findings: ["async-no-on-failure Ingest"] },
  { file: "eventbridge-no-dlq.yaml", exitCode: 1, findings: ["eventbridge-target-no-dlq PhotoCreated"] },
  { file: "state-table-no-ttl.json", exitCode: 0, findings: ["state-table-no-ttl GuardTable"] },
  {
    file: "sam-orders.yaml",
    exitCode: 1,
    findings: [
      "async-no-on-failure UploadsFunction",
      "sqs-visibility-6x OrdersQueue",
      "state-table-no-ttl GuardTable",
    ],
  },
  {
    file: "unresolved.yaml",
    exitCode: 0,
    findings: ["unresolved-reference ImportedSource", "unresolved-reference ImportedSource"],
  },
];

describe("the hand-broken templates in test/fixtures/audit", () => {
  it.each(CASES)("$file → $findings", async ({ file, exitCode, findings, suppressed = [] }) => {
    const result = await auditTemplateFile(join(fixtures, file));
    expect(result.findings.map((f) => `${f.rule} ${f.resource}`).sort()).toEqual(findings);
    expect(result.suppressed.map((f) => `${f.rule} ${f.resource}`).sort()).toEqual(suppressed);
    expect(result.exitCode).toBe(exitCode);
  });

  it("covers every rule (counted, not suppressed), in JSON and in YAML with short-form tags", () => {
    const rules = new Set(CASES.flatMap((c) => c.findings.map((f) => f.split(" ")[0])));
    expect([...rules].sort()).toEqual(Object.keys(RULES).sort());
    const yamlWithTags = CASES.filter(
      (c) =>
        c.file.endsWith(".yaml") && /!(GetAtt|Ref|Sub) /.test(readFileSync(join(fixtures, c.file), "utf8")),
    );
    expect(yamlWithTags.length).toBeGreaterThanOrEqual(2);
    expect(CASES.filter((c) => c.file.endsWith(".json")).length).toBeGreaterThanOrEqual(2);
  });
});
