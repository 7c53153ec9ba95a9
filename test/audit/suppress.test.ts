import { describe, expect, it } from "vitest";
import {
  auditTemplate,
  auditTemplateReport,
  parseIgnore,
  parseIgnoreFile,
  RULES,
  SuppressionError,
} from "../../src/audit/index.js";
import { OptionsError } from "../../src/core/errors.js";
import { fn, queue, type Resources } from "./helpers.js";

/** S3 → Lambda with no guard and no on-failure path: s3-no-guard-table on Bucket, async-no-on-failure on Fn. */
function unguarded(metadata: { Bucket?: unknown; Fn?: unknown; template?: unknown } = {}): string {
  const resources: Record<string, Record<string, unknown>> = {
    Bucket: {
      Type: "AWS::S3::Bucket",
      Properties: {
        NotificationConfiguration: { LambdaConfigurations: [{ Function: { "Fn::GetAtt": ["Fn", "Arn"] } }] },
      },
    },
    Fn: fn(),
  };
  if (metadata.Bucket !== undefined) resources.Bucket!.Metadata = metadata.Bucket;
  if (metadata.Fn !== undefined) resources.Fn!.Metadata = metadata.Fn;
  const doc: Record<string, unknown> = { Resources: resources };
  if (metadata.template !== undefined) doc.Metadata = metadata.template;
  return JSON.stringify(doc);
}

const cdkNag = (...rules: unknown[]) => ({ cdk_nag: { rules_to_suppress: rules } });
const cfnLint = (...ids: unknown[]) => ({ "cfn-lint": { config: { ignore_checks: ids } } });
const REASON = "the guard's state is in PostgreSQL";

const rules = (text: string, ignore: string[] = []) => {
  const r = auditTemplateReport(text, { ignore: ignore.map((t) => parseIgnore(t)) });
  const pair = (f: { rule: string; resource: string }) => `${f.rule} ${f.resource}`;
  return { counted: r.findings.map(pair), suppressed: r.suppressed.map(pair), report: r };
};

describe("suppressions in the template's metadata", () => {
  it("cdk-nag's shape on a resource covers that resource's findings only, with its reason", () => {
    const r = rules(unguarded({ Bucket: cdkNag({ id: "s3-no-guard-table", reason: REASON }) }));
    expect(r.counted).toEqual(["async-no-on-failure Fn"]);
    expect(r.suppressed).toEqual(["s3-no-guard-table Bucket"]);
    expect(r.report.suppressed[0]).toMatchObject({
      suppressed: true,
      reason: REASON,
      suppressedBy: "cdk_nag metadata on Bucket",
    });
    // On another resource it covers nothing.
    expect(rules(unguarded({ Fn: cdkNag({ id: "s3-no-guard-table", reason: REASON }) })).suppressed).toEqual(
      [],
    );
  });

  it("cfn-lint's shape on a resource, with no reason", () => {
    const r = rules(unguarded({ Fn: cfnLint("async-no-on-failure") }));
    expect(r.counted).toEqual(["s3-no-guard-table Bucket"]);
    expect(r.report.suppressed).toMatchObject([
      { rule: "async-no-on-failure", reason: null, suppressedBy: "cfn-lint metadata on Fn" },
    ]);
  });

  it("the template's own Metadata, in either shape, covers every resource", () => {
    const both = {
      ...cdkNag({ id: "s3-no-guard-table", reason: REASON }),
      ...cfnLint("async-no-on-failure"),
    };
    const r = rules(unguarded({ template: both }));
    expect(r.counted).toEqual([]);
    expect(r.report.suppressed.map((f) => f.suppressedBy)).toEqual([
      "cdk_nag metadata of the template",
      "cfn-lint metadata of the template",
    ]);
  });

  it("a resource's suppression is reported before the template's and the command line's", () => {
    const text = unguarded({
      Bucket: cdkNag({ id: "s3-no-guard-table", reason: "resource-level reason" }),
      template: cdkNag({ id: "s3-no-guard-table", reason: "template-level reason" }),
    });
    const r = rules(text, ["s3-no-guard-table=command line"]);
    expect(r.report.suppressed[0]!.reason).toBe("resource-level reason");
  });

  it("leaves other tools' rules to them: cdk-nag's AwsSolutions-*, cfn-lint's W/E ids", () => {
    const text = unguarded({
      Bucket: { ...cdkNag({ id: "AwsSolutions-S1", reason: "x" }), ...cfnLint("W3005", "E", "I3042") },
      template: cdkNag({ id: "HIPAA.Security-LambdaDLQ" }),
    });
    expect(rules(text).counted).toEqual(["s3-no-guard-table Bucket", "async-no-on-failure Fn"]);
  });

  it("decodes a reason cdk-nag base64-encoded (is_reason_encoded)", () => {
    const reason = "state in PostgreSQL — outside the stack";
    const entry = {
      id: "s3-no-guard-table",
      reason: Buffer.from(reason).toString("base64"),
      is_reason_encoded: true,
    };
    expect(rules(unguarded({ Bucket: cdkNag(entry) })).report.suppressed[0]!.reason).toBe(reason);
  });

  it.each([
    [
      "an unknown id of ours",
      unguarded({ Bucket: cdkNag({ id: "s3-no-guard", reason: REASON }) }),
      /unknown rule "s3-no-guard" \(rules: sqs-visibility-6x, .*hand-made-lock-table/,
    ],
    [
      "an unknown id in cfn-lint's list",
      unguarded({ template: cfnLint("sqs-no-dl") }),
      /Metadata\.cfn-lint\.config\.ignore_checks\[0\]: unknown rule "sqs-no-dl"/,
    ],
    [
      "one of ours in another case",
      unguarded({ Fn: cfnLint("Async-No-On-Failure") }),
      /unknown rule "Async-No-On-Failure"/,
    ],
    [
      "a cdk-nag entry without a reason",
      unguarded({ Bucket: cdkNag({ id: "s3-no-guard-table" }) }),
      /rules_to_suppress\[0\]: s3-no-guard-table needs a reason/,
    ],
    [
      "a reason under 10 characters",
      unguarded({ Bucket: cdkNag({ id: "s3-no-guard-table", reason: "postgres" }) }),
      /under 10 characters/,
    ],
    [
      "applies_to",
      unguarded({ Bucket: cdkNag({ id: "s3-no-guard-table", reason: REASON, applies_to: ["x"] }) }),
      /applies_to is not supported/,
    ],
    [
      "an unknown key",
      unguarded({ Bucket: cdkNag({ id: "s3-no-guard-table", reason: REASON, reasn: "x" }) }),
      /unknown key "reasn"/,
    ],
    [
      "rules_to_suppress not a list",
      unguarded({ Bucket: { cdk_nag: { rules_to_suppress: { id: "x" } } } }),
      /Resources\.Bucket\.Metadata\.cdk_nag\.rules_to_suppress: must be a list/,
    ],
    ["an entry without an id", unguarded({ Bucket: cdkNag({ reason: REASON }) }), /id must be a string/],
    [
      "ignore_checks not a list",
      unguarded({ template: { "cfn-lint": { config: { ignore_checks: "sqs-no-dlq" } } } }),
      /must be a list/,
    ],
    [
      "cfn-lint's config not a mapping",
      unguarded({ template: { "cfn-lint": { config: ["x"] } } }),
      /Metadata\.cfn-lint\.config: must be a mapping/,
    ],
  ])("%s is a SuppressionError naming where it is written", (_name, text, message) => {
    expect(() => auditTemplate(text)).toThrow(SuppressionError);
    expect(() => auditTemplate(text)).toThrow(message);
  });

  it("is checked even when the rule has no finding to suppress (eagerly)", () => {
    const clean = JSON.stringify({ Metadata: cfnLint("no-such-rule"), Resources: { Q: queue() } });
    expect(() => auditTemplate(clean)).toThrow(/unknown rule "no-such-rule"/);
  });

  it("SAM: a function's Metadata covers the resources lowered from it (<Function><Event>)", () => {
    const text = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Metadata:
      cfn-lint: { config: { ignore_checks: [eventbridge-target-no-dlq, async-no-on-failure] } }
    Properties:
      Handler: index.handler
      Events:
        Created: { Type: EventBridgeRule, Properties: { Pattern: { source: [my.app] } } }
`;
    const r = rules(text);
    expect(r.counted).toEqual([]);
    expect(r.suppressed).toEqual(["async-no-on-failure Fn", "eventbridge-target-no-dlq FnCreated"]);
  });
});

describe("parseIgnore and parseIgnoreFile (--ignore, --ignore-file)", () => {
  it("reads <rule-id>[=<reason>]", () => {
    expect(parseIgnore("sqs-no-dlq")).toEqual({ rule: "sqs-no-dlq", reason: null, source: "--ignore" });
    expect(parseIgnore(" sqs-no-dlq = the DLQ is another stack's = really ")).toMatchObject({
      rule: "sqs-no-dlq",
      reason: "the DLQ is another stack's = really",
    });
  });

  it("an unknown id lists every valid one; an empty reason after = is refused", () => {
    const error = (() => {
      try {
        parseIgnore("sqs-no-dl");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SuppressionError);
    for (const id of Object.keys(RULES)) expect((error as Error).message).toContain(id);
    expect(() => parseIgnore("sqs-no-dlq=")).toThrow(/empty reason/);
    expect(() => parseIgnore("")).toThrow(SuppressionError);
  });

  it("a file: one a line, # comments and blank lines skipped, errors at file:line", () => {
    const text = "# reviewed 2026-05\n\nsqs-no-dlq=the DLQ is another stack's\r\n  fifo-content-dedup  \n";
    expect(parseIgnoreFile(text, "ignores.txt")).toEqual([
      { rule: "sqs-no-dlq", reason: "the DLQ is another stack's", source: "ignores.txt:3" },
      { rule: "fifo-content-dedup", reason: null, source: "ignores.txt:4" },
    ]);
    expect(() => parseIgnoreFile("sqs-no-dlq\nnope\n", "ignores.txt")).toThrow(
      /^ignores\.txt:2: unknown rule "nope"/,
    );
  });

  it("a command-line suppression covers every resource", () => {
    const r = rules(unguarded(), ["s3-no-guard-table", "async-no-on-failure=on-failure set by the platform"]);
    expect(r.counted).toEqual([]);
    expect(r.report.suppressed.map((f) => [f.rule, f.reason, f.suppressedBy])).toEqual([
      ["s3-no-guard-table", null, "--ignore"],
      ["async-no-on-failure", "on-failure set by the platform", "--ignore"],
    ]);
  });
});

describe("auditTemplate options", () => {
  it("rejects unknown keys and ignore entries that are not suppressions", () => {
    const text = unguarded();
    expect(() => auditTemplate(text, { ignor: [] } as never)).toThrow(OptionsError);
    expect(() => auditTemplate(text, { ignore: ["sqs-no-dlq"] } as never)).toThrow(
      /ignore must be a list of suppressions/,
    );
  });

  it("auditTemplate returns only the findings that count", () => {
    const r: Resources = { Bucket: { Type: "AWS::S3::Bucket" } };
    expect(auditTemplate(JSON.stringify({ Resources: r }))).toEqual([]);
    expect(
      auditTemplate(unguarded(), { ignore: [parseIgnore("s3-no-guard-table")] }).map((f) => f.rule),
    ).toEqual(["async-no-on-failure"]);
  });
});
