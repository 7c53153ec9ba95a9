import { describe, expect, it } from "vitest";
import { auditTemplate } from "../../src/audit/index.js";
import { synth } from "../cdk/helpers.js";

/** The construct's stack for a stream delivery, as a template (prebuilt code: no bundling needed to audit it). */
const templateOf = (delivery: "kinesis" | "dynamodb-streams") =>
  synth({ pipelineName: "streams", delivery }).template.toJSON() as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  };

describe("eonce audit template on EffectivelyOncePipeline's stream deliveries", () => {
  it.each(["kinesis", "dynamodb-streams"] as const)("%s, with the defaults: no findings", (delivery) => {
    expect(auditTemplate(JSON.stringify(templateOf(delivery)))).toEqual([]);
  });

  it.each(["kinesis", "dynamodb-streams"] as const)(
    "%s with its mapping's safe settings removed: each one found",
    (delivery) => {
      const t = templateOf(delivery);
      const [id, esm] = Object.entries(t.Resources).find(
        ([, r]) => r.Type === "AWS::Lambda::EventSourceMapping",
      )!;
      for (const key of [
        "BisectBatchOnFunctionError",
        "MaximumRetryAttempts",
        "MaximumRecordAgeInSeconds",
        "DestinationConfig",
        "FunctionResponseTypes",
      ])
        delete esm.Properties[key];
      esm.Properties.StartingPosition = "LATEST";
      esm.Properties.TumblingWindowInSeconds = 30;
      const rules = auditTemplate(JSON.stringify(t)).map((f) => `${f.rule} ${f.resource}`);
      expect(rules.sort()).toEqual(
        [
          "batch-item-failures",
          "stream-bisect",
          "stream-no-on-failure",
          "stream-starting-latest",
          "stream-tumbling-window",
          "stream-unbounded-record-age",
          "stream-unbounded-retries",
        ].map((r) => `${r} ${id}`),
      );
    },
  );

  it("the created source table is no guard table: untagged, it would be one without TTL", () => {
    const t = templateOf("dynamodb-streams");
    const source = Object.values(t.Resources).find(
      (r) => r.Type === "AWS::DynamoDB::Table" && r.Properties.StreamSpecification,
    )!;
    delete source.Properties.Tags;
    expect(auditTemplate(JSON.stringify(t)).map((f) => f.rule)).toEqual(["state-table-no-ttl"]);
  });
});
