import { describe, expect, it } from "vitest";
import { auditTemplate } from "../../src/audit/index.js";

const sam = (functionProps: string) => `
Transform: AWS::Serverless-2016-10-31
Resources:
  State:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{ AttributeName: pk, AttributeType: S }]
      KeySchema: [{ AttributeName: pk, KeyType: HASH }]
      TimeToLiveSpecification: { AttributeName: expiresAt, Enabled: true }
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Handler: index.handler
${functionProps}
      Events:
        Created:
          Type: EventBridgeRule
          Properties:
            Pattern: { source: [aws.s3] }
`;

const rules = (text: string) => auditTemplate(text).map((f) => `${f.rule} ${f.resource}`);

describe("SAM functions, lowered to what the transform deploys", () => {
  it("an EventBridgeRule event without DeadLetterConfig, a function without on-failure: both reported", () => {
    expect(rules(sam(""))).toEqual(["async-no-on-failure Fn", "eventbridge-target-no-dlq FnCreated"]);
  });

  it("EventInvokeConfig OnFailure (SAM-created queue) and the rule's DeadLetterConfig satisfy both", () => {
    const text = sam(`      EventInvokeConfig:
        DestinationConfig:
          OnFailure:
            Type: SQS`).replace(
      "Pattern: { source: [aws.s3] }",
      "Pattern: { source: [aws.s3] }\n            DeadLetterConfig: { Type: SQS }",
    );
    expect(rules(text)).toEqual([]);
  });

  it("DeadLetterQueue on the function counts as its on-failure path", () => {
    const text = sam(`      DeadLetterQueue:
        Type: SQS
        TargetArn: arn:aws:sqs:eu-west-1:123456789012:dlq`);
    expect(rules(text)).toEqual(["eventbridge-target-no-dlq FnCreated"]);
  });
});
