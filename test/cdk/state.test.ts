import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { auditTemplate } from "../../src/audit/index.js";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";
import { arnOf, INLINE, logicalId, type Synthesized, statementsOfRole, synth } from "./helpers.js";

/**
 * The `state` prop: where the guard's state lives. `table` (the default) is what test/cdk/pipeline.test.ts checks;
 * here inline state (no state table; the inline store's actions on its table only) and external state (neither).
 */

// The records pipeline as examples/records/inline.ts runs it: the state in each upload's own row.
const inlineRecords = synth({
  pipelineName: "records",
  delivery: "s3-direct",
  inputBucketRead: false,
  recordsTable: { keyAttribute: "id" },
  state: { kind: "inline" },
});

/** A stack with the user's own table (with an index), and a pipeline keeping its state inline in that table. */
function withOwnTable(): Synthesized & { table: dynamodb.Table } {
  const app = new App();
  const stack = new Stack(app, "Own");
  const table = new dynamodb.Table(stack, "Inventory", {
    partitionKey: { name: "sku", type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  table.addGlobalSecondaryIndex({
    indexName: "byShelf",
    partitionKey: { name: "shelf", type: dynamodb.AttributeType.STRING },
  });
  const pipeline = new EffectivelyOncePipeline(stack, "Pipeline", {
    ...INLINE,
    pipelineName: "inventory",
    delivery: "sqs",
    state: { kind: "inline", table, keyAttribute: "sku" },
  });
  return { app, stack, pipeline, table, template: Template.fromStack(stack) };
}

const roleId = (s: Synthesized) => logicalId(s.stack, s.pipeline.role);
const dynamoStatements = (s: Synthesized) =>
  statementsOfRole(s.template, roleId(s)).filter((st) => st.actions.some((a) => a.startsWith("dynamodb:")));
const environment = (s: Synthesized) =>
  s.template.toJSON().Resources[logicalId(s.stack, s.pipeline.function)].Properties.Environment.Variables;
const tags = (s: Synthesized) =>
  s.template.toJSON().Resources[logicalId(s.stack, s.pipeline.function)].Properties.Tags;

describe("inline state in the records table", () => {
  const s = inlineRecords;

  it("synthesizes no state table: the records table is the only table", () => {
    expect(s.pipeline.stateTable).toBeUndefined();
    s.template.resourceCountIs("AWS::DynamoDB::Table", 1);
    const [table] = Object.values(s.template.findResources("AWS::DynamoDB::Table"));
    expect(table!.Properties.KeySchema).toEqual([{ AttributeName: "id", KeyType: "HASH" }]);
  });

  it("grants exactly GetItem and UpdateItem on the records table, and nothing else on DynamoDB", () => {
    const statements = dynamoStatements(s);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.actions.sort()).toEqual(["dynamodb:GetItem", "dynamodb:UpdateItem"]);
    expect(statements[0]!.resource).toEqual([arnOf(logicalId(s.stack, s.pipeline.recordsTable!))]);
  });

  it("tells the function where the state lives, and no STATE_TABLE", () => {
    const env = environment(s);
    expect(env).toMatchObject({
      EONCE_STATE: "inline",
      EONCE_STATE_TABLE: { Ref: logicalId(s.stack, s.pipeline.recordsTable!) },
      EONCE_STATE_KEY_ATTRIBUTE: "id",
      RECORDS_TABLE: { Ref: logicalId(s.stack, s.pipeline.recordsTable!) },
    });
    expect(env.STATE_TABLE).toBeUndefined();
    expect(tags(s)).toEqual([{ Key: "eonce:state", Value: "inline" }]);
  });

  it("adds the inline store's actions to the records table's actions given", () => {
    const put = synth({
      pipelineName: "p",
      delivery: "sqs",
      recordsTable: { actions: ["dynamodb:PutItem"] },
      state: { kind: "inline" },
    });
    const [statement] = dynamoStatements(put);
    expect(statement!.actions.sort()).toEqual([
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]);
    expect(environment(put).EONCE_STATE_KEY_ATTRIBUTE).toBe("pk");
  });

  it("eonce audit template: S3 events to the function, no guard table, and no s3-no-guard-table", () => {
    const template = s.template.toJSON();
    expect(auditTemplate(JSON.stringify(template))).toEqual([]);
    // The tag is what tells: without it, the stack shows no guard, and the table the function writes (the records
    // table, where the state lives inline) reads as a hand-made lock.
    const fn = template.Resources[logicalId(s.stack, s.pipeline.function)];
    delete fn.Properties.Tags;
    expect(auditTemplate(JSON.stringify(template)).map((f) => f.rule)).toEqual(["hand-made-lock-table"]);
  });
});

describe("inline state in the user's own table", () => {
  const s = withOwnTable();

  it("grants GetItem and UpdateItem on that table's ARN only (not its indexes), no state or records table", () => {
    expect(s.pipeline.stateTable).toBeUndefined();
    expect(s.pipeline.recordsTable).toBeUndefined();
    s.template.resourceCountIs("AWS::DynamoDB::Table", 1);
    const statements = dynamoStatements(s);
    expect(statements).toEqual([
      { actions: ["dynamodb:GetItem", "dynamodb:UpdateItem"], resource: arnOf(logicalId(s.stack, s.table)) },
    ]);
    expect(environment(s)).toMatchObject({
      EONCE_STATE: "inline",
      EONCE_STATE_TABLE: { Ref: logicalId(s.stack, s.table) },
      EONCE_STATE_KEY_ATTRIBUTE: "sku",
    });
  });

  it("cdk-nag clean: no wildcard for the table's indexes to acknowledge", () => {
    for (const pack of [new AwsSolutionsChecks(s.app), new ServerlessChecks(s.app)]) {
      const findings = pack.validateScope(s.pipeline).violations.map((v) => v.ruleName);
      expect(findings).toEqual([]);
    }
  });

  it("takes an imported table too", () => {
    const app = new App();
    const stack = new Stack(app, "Imported");
    const table = dynamodb.Table.fromTableName(stack, "T", "inventory");
    new EffectivelyOncePipeline(stack, "P", {
      ...INLINE,
      pipelineName: "p",
      delivery: "sqs",
      state: { kind: "inline", table },
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::DynamoDB::Table", 0);
    const resources = JSON.stringify(template.findResources("AWS::IAM::Policy"));
    expect(resources).toContain(":table/inventory");
    expect(resources).not.toContain("index");
  });
});

describe("external state", () => {
  const s = synth({ pipelineName: "ext", delivery: "s3-sqs", state: { kind: "external" } });

  it("synthesizes no table and grants nothing on DynamoDB", () => {
    expect(s.pipeline.stateTable).toBeUndefined();
    s.template.resourceCountIs("AWS::DynamoDB::Table", 0);
    expect(dynamoStatements(s)).toEqual([]);
    expect(environment(s).EONCE_STATE).toBe("external");
    expect(environment(s).STATE_TABLE).toBeUndefined();
    expect(tags(s)).toEqual([{ Key: "eonce:state", Value: "external" }]);
    expect(auditTemplate(JSON.stringify(s.template.toJSON()))).toEqual([]);
  });
});

describe("table state (the default) is unchanged", () => {
  it('`{ kind: "table" }` synthesizes what no state prop does', () => {
    const props = { pipelineName: "t", delivery: "sqs", recordsTable: true } as const;
    const plain = synth(props).template.toJSON();
    const explicit = synth({ ...props, state: { kind: "table" } }).template.toJSON();
    expect(explicit).toEqual(plain);
    const fn = Object.values(
      plain.Resources as Record<string, { Type: string; Properties: { Tags?: unknown } }>,
    ).find((r) => r.Type === "AWS::Lambda::Function");
    expect(fn!.Properties.Tags).toBeUndefined();
  });
});

describe("state prop validation (at construction)", () => {
  const construct = (state: unknown, extra: Partial<EffectivelyOncePipelineProps> = {}) =>
    new EffectivelyOncePipeline(new Stack(new App(), "V"), "P", {
      ...INLINE,
      pipelineName: "p",
      delivery: "sqs",
      ...extra,
      state,
    } as EffectivelyOncePipelineProps);
  const table = () => dynamodb.Table.fromTableName(new Stack(new App(), "X"), "T", "t");

  it.each([
    ["not an object", "inline", /state must be an object with kind/],
    ["no kind", {}, /state: must be an object with kind \(table, inline, external\)/],
    [
      "an unknown kind",
      { kind: "postgres" },
      /state: kind must be one of table, inline, external, got "postgres"/,
    ],
    ["an unknown key", { kind: "inline", tabel: {} }, /state: unknown option "tabel"/],
    ["a table for external", { kind: "external", table: {} }, /state: unknown option "table"/],
    ["a key for table", { kind: "table", keyAttribute: "pk" }, /state: unknown option "keyAttribute"/],
    [
      "a table that is no table",
      { kind: "inline", table: { tableName: 1 } },
      /table must be a DynamoDB table/,
    ],
    [
      "inline with neither table nor records table",
      { kind: "inline" },
      /inline state without a table lives in the records table: set recordsTable/,
    ],
    [
      "a reserved key name",
      { kind: "inline", keyAttribute: "eo_pk" },
      /keyAttribute must be a name outside the store's reserved prefix eo_/,
    ],
  ])("throws OptionsError: %s", (_, state, message) => {
    expect(() => construct(state)).toThrow(message as RegExp);
  });

  it("inline in the records table takes the records table's key attribute", () => {
    expect(() =>
      construct({ kind: "inline", keyAttribute: "sku" }, { recordsTable: { keyAttribute: "id" } }),
    ).toThrow(/keyAttribute \(sku\) must be the records table's \(id\)/);
    expect(() =>
      construct({ kind: "inline", keyAttribute: "id" }, { recordsTable: { keyAttribute: "id" } }),
    ).not.toThrow();
    expect(() => construct({ kind: "inline", table: table() })).not.toThrow();
  });
});
