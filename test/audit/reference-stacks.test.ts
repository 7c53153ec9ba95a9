import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { App } from "aws-cdk-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../cdk/app.js";
import { auditTemplate } from "../../src/audit/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), "eonce-audit-stacks-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const STACKS = ["EffectivelyOnce-Images", "EffectivelyOnce-Orders", "EffectivelyOnce-Records"];
const templateFile = (stack: string) => join(outdir, `${stack}.template.json`);

// The app as `npm run synth` builds it (bundled handlers), synthesized once for the file.
beforeAll(() => {
  buildApp(new App({ outdir })).synth();
}, 240_000);

describe("eonce audit template on the three reference stacks (cdk/app.ts)", () => {
  it.each(STACKS)("%s has no findings", (stack) => {
    expect(auditTemplate(readFileSync(templateFile(stack), "utf8"))).toEqual([]);
  });

  it("the same audit sees the Orders stack broken: visibility under 6 ×, no item failures", () => {
    const t = JSON.parse(readFileSync(templateFile("EffectivelyOnce-Orders"), "utf8"));
    const resources = t.Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
    const [queueId, queue] = Object.entries(resources).find(
      ([, r]) => r.Type === "AWS::SQS::Queue" && r.Properties.RedrivePolicy,
    )!;
    const [esmId, esm] = Object.entries(resources).find(
      ([, r]) => r.Type === "AWS::Lambda::EventSourceMapping",
    )!;
    queue.Properties.VisibilityTimeout = 6 * 30 - 1;
    delete esm.Properties.FunctionResponseTypes;
    const findings = auditTemplate(JSON.stringify(t)).map((f) => `${f.rule} ${f.resource}`);
    expect(findings.sort()).toEqual([`batch-item-failures ${esmId}`, `sqs-visibility-6x ${queueId}`]);
  });

  it("the Records stack without its EventInvokeConfig loses failed S3 events", () => {
    const t = JSON.parse(readFileSync(templateFile("EffectivelyOnce-Records"), "utf8"));
    const resources = t.Resources as Record<string, { Type: string }>;
    for (const [id, r] of Object.entries(resources))
      if (r.Type === "AWS::Lambda::EventInvokeConfig") delete resources[id];
    expect(auditTemplate(JSON.stringify(t)).map((f) => f.rule)).toEqual(["async-no-on-failure"]);
  });

  // The one spawned test: the real command, as a user runs it, on a synthesized template and a broken fixture.
  it("the eonce binary exits 0 on a reference stack and 1 on a broken fixture", async () => {
    const run = (file: string) =>
      promisify(execFile)(
        "npx",
        ["tsx", join(root, "src/cli/main.ts"), "audit", "template", file, "--json"],
        {
          cwd: root,
        },
      ).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
    const clean = await run(templateFile("EffectivelyOnce-Orders"));
    expect(clean).toEqual({ code: 0, stdout: "[]\n" });
    const failing = await run(join(root, "test/fixtures/audit/sqs-no-dlq.yaml"));
    expect(failing.code).toBe(1);
    expect(JSON.parse(failing.stdout)).toMatchObject([{ rule: "sqs-no-dlq", resource: "JobsQueue" }]);
  }, 60_000);
});
