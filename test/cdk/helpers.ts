import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { expect } from "vitest";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";

/** Prebuilt code, so most tests skip esbuild (bundling is tested once, in bundling.test.ts). */
export const INLINE = {
  code: lambda.Code.fromInline("export const handler = async () => ({ batchItemFailures: [] });"),
  handler: "index.handler",
} as const;

export type TestProps = Omit<EffectivelyOncePipelineProps, "code" | "handler" | "entry"> &
  Partial<Pick<EffectivelyOncePipelineProps, "code" | "handler" | "entry">>;

export interface Synthesized {
  app: App;
  stack: Stack;
  pipeline: EffectivelyOncePipeline;
  template: Template;
}

export function synth(props: TestProps): Synthesized {
  const app = new App();
  const stack = new Stack(app, "Test");
  const pipeline = new EffectivelyOncePipeline(stack, "Pipeline", {
    ...(props.entry ? {} : INLINE),
    ...props,
  } as EffectivelyOncePipelineProps);
  return { app, stack, pipeline, template: Template.fromStack(stack) };
}

export function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as { logicalId: string };
  return stack.resolve(child.logicalId) as string;
}

export type Statement = { Action: string | string[]; Effect: string; Resource: unknown; Condition?: unknown };

/** The statements of every IAM policy attached to `roleId`, with each action list as an array. */
export function statementsOfRole(
  template: Template,
  roleId: string,
): { actions: string[]; resource: unknown }[] {
  const policies = template.findResources("AWS::IAM::Policy");
  const out: { actions: string[]; resource: unknown }[] = [];
  for (const policy of Object.values(policies)) {
    const roles = (policy.Properties.Roles ?? []) as { Ref: string }[];
    if (!roles.some((r) => r.Ref === roleId)) continue;
    for (const s of policy.Properties.PolicyDocument.Statement as Statement[]) {
      expect(s.Effect).toBe("Allow");
      out.push({ actions: ([] as string[]).concat(s.Action), resource: s.Resource });
    }
  }
  return out;
}

/** `{ "Fn::GetAtt": [id, "Arn"] }`, possibly wrapped in a one-element list (Table.grant writes a list). */
export function arnOf(id: string): unknown {
  return { "Fn::GetAtt": [id, "Arn"] };
}

export function objectsOf(id: string, prefix = ""): unknown {
  return { "Fn::Join": ["", [{ "Fn::GetAtt": [id, "Arn"] }, `/${prefix}*`]] };
}

/** Normalizes a statement resource to a list (Table.grant writes a list of one ARN). */
export function resources(resource: unknown): unknown[] {
  return Array.isArray(resource) ? resource : [resource];
}
