import { describe, expect, it } from "vitest";
import { parseTemplate, TemplateLoadError } from "../../src/audit/index.js";

describe("parseTemplate", () => {
  it("reads CloudFormation's short-form tags as the long form", () => {
    const doc = parseTemplate(`
Resources:
  A:
    Type: X
    Properties:
      r: !Ref Q
      g: !GetAtt Q.Arn
      g2: !GetAtt [Q, Arn]
      s: !Sub "arn:\${AWS::Partition}:sqs:\${Q.QueueName}"
      s2: !Sub ["\${N}", { N: !Ref Q }]
      j: !Join ["", [!GetAtt Q.Arn, "/x"]]
      i: !ImportValue shared
      m: !If [C, !Ref Q, !Ref AWS::NoValue]
      b: !Base64
        Fn::Sub: x
`);
    expect((doc.Resources as Record<string, { Properties: unknown }>).A!.Properties).toEqual({
      r: { Ref: "Q" },
      g: { "Fn::GetAtt": ["Q", "Arn"] },
      g2: { "Fn::GetAtt": ["Q", "Arn"] },
      // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's ${} syntax, not JavaScript's
      s: { "Fn::Sub": "arn:${AWS::Partition}:sqs:${Q.QueueName}" },
      // biome-ignore lint/suspicious/noTemplateCurlyInString: as above
      s2: { "Fn::Sub": ["${N}", { N: { Ref: "Q" } }] },
      j: { "Fn::Join": ["", [{ "Fn::GetAtt": ["Q", "Arn"] }, "/x"]] },
      i: { "Fn::ImportValue": "shared" },
      m: { "Fn::If": ["C", { Ref: "Q" }, { Ref: "AWS::NoValue" }] },
      b: { "Fn::Base64": { "Fn::Sub": "x" } },
    });
  });

  it("reads JSON, with or without a byte order mark", () => {
    expect(parseTemplate('\uFEFF{"Resources": {}}')).toEqual({ Resources: {} });
  });

  it.each([
    ["not YAML", "a: [1, 2", /not JSON or YAML/],
    ["not JSON", '{"Resources": ', /not JSON or YAML/],
    ["a list", "- 1\n- 2", /not a mapping/],
    ["no Resources", "AWSTemplateFormatVersion: '2010-09-09'", /no Resources/],
    ["Resources not a mapping", "Resources: [a]", /no Resources/],
  ])("%s is a TemplateLoadError", (_name, text, message) => {
    expect(() => parseTemplate(text)).toThrow(TemplateLoadError);
    expect(() => parseTemplate(text)).toThrow(message);
  });

  it("keeps the parser's error as the cause", () => {
    try {
      parseTemplate('{"Resources": ');
      expect.unreachable();
    } catch (e) {
      expect((e as Error).cause).toBeInstanceOf(SyntaxError);
    }
  });
});
