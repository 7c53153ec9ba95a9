import { parse, type Tags, type YAMLMap, type YAMLSeq } from "yaml";
import { describeError, describeText } from "../core/describe-value.js";
import { EffectivelyOnceError } from "../core/errors.js";

/** A template that cannot be read: not JSON or YAML, or not a CloudFormation template (no `Resources`). */
export class TemplateLoadError extends EffectivelyOnceError {}

/** CloudFormation's short-form tags (`!Ref X`, `!GetAtt X.Arn`, `!Sub …`) and the intrinsic each stands for. */
const SHORT_FORMS: Record<string, string> = {
  Ref: "Ref",
  Condition: "Condition",
  GetAtt: "Fn::GetAtt",
  Sub: "Fn::Sub",
  Join: "Fn::Join",
  Select: "Fn::Select",
  Split: "Fn::Split",
  If: "Fn::If",
  Equals: "Fn::Equals",
  Not: "Fn::Not",
  And: "Fn::And",
  Or: "Fn::Or",
  FindInMap: "Fn::FindInMap",
  Base64: "Fn::Base64",
  Cidr: "Fn::Cidr",
  GetAZs: "Fn::GetAZs",
  ImportValue: "Fn::ImportValue",
  Transform: "Fn::Transform",
  Length: "Fn::Length",
  ToJsonString: "Fn::ToJsonString",
};

/** Each short form may tag a scalar, a sequence or a mapping: one YAML tag definition per kind. */
const CUSTOM_TAGS: Tags = Object.entries(SHORT_FORMS).flatMap(([name, fn]) => [
  // `!GetAtt Queue.Arn` is the scalar spelling of `Fn::GetAtt: [Queue, Arn]`.
  { tag: `!${name}`, resolve: (s: string) => ({ [fn]: name === "GetAtt" ? splitGetAtt(s) : s }) },
  { tag: `!${name}`, collection: "seq" as const, resolve: (c: YAMLSeq | YAMLMap) => ({ [fn]: c.toJSON() }) },
  { tag: `!${name}`, collection: "map" as const, resolve: (c: YAMLSeq | YAMLMap) => ({ [fn]: c.toJSON() }) },
]);

function splitGetAtt(s: string): string[] {
  const dot = s.indexOf(".");
  return dot === -1 ? [s] : [s.slice(0, dot), s.slice(dot + 1)];
}

/** A template's text (JSON, or YAML with short-form tags) as the JSON form CloudFormation works on. */
export function parseTemplate(text: string): Record<string, unknown> {
  // Editors on Windows save UTF-8 with a byte order mark.
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  let doc: unknown;
  try {
    // JSON is YAML, but JSON.parse is faster on the large templates CDK writes, and its errors are clearer.
    doc = body.trimStart().startsWith("{")
      ? JSON.parse(body)
      : parse(body, { customTags: CUSTOM_TAGS, maxAliasCount: 1000 });
  } catch (e) {
    // The parsers' first line says what and where; YAML's next lines quote the input.
    const first = e instanceof Error ? describeText(e.message.split("\n")[0] ?? "") : describeError(e);
    throw new TemplateLoadError(`not JSON or YAML: ${first}`, { cause: e });
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new TemplateLoadError("not a CloudFormation template: the document is not a mapping");
  }
  const resources = (doc as Record<string, unknown>).Resources;
  if (typeof resources !== "object" || resources === null || Array.isArray(resources)) {
    throw new TemplateLoadError("not a CloudFormation template: no Resources mapping");
  }
  return doc as Record<string, unknown>;
}
