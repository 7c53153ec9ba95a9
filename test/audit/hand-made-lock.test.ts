import { describe, expect, it } from "vitest";
import { auditTemplate } from "../../src/audit/index.js";
import { audit, fn, guardTable, mapping, pairs, queue, type Resources } from "./helpers.js";

const WRITES = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"];

/** A table keyed by the object key (no guard table's shape). */
const lockTable = (props: Record<string, unknown> = {}) => ({
  Type: "AWS::DynamoDB::Table",
  Properties: {
    AttributeDefinitions: [{ AttributeName: "objectKey", AttributeType: "S" }],
    KeySchema: [{ AttributeName: "objectKey", KeyType: "HASH" }],
    ...props,
  },
});

const statement = (
  Action: unknown,
  Resource: unknown = { "Fn::GetAtt": ["Locks", "Arn"] },
  Effect = "Allow",
) => ({
  Effect,
  Action,
  Resource,
});

const role = (statements: unknown[]) => ({
  Type: "AWS::IAM::Role",
  Properties: { Policies: [{ PolicyName: "locks", PolicyDocument: { Statement: statements } }] },
});

/** The sequencer-lock shape: S3 → Lambda, the function's role writing a table of its own. */
function lockStack(statements: unknown[] = [statement(WRITES)], extra: Resources = {}): Resources {
  return {
    Bucket: {
      Type: "AWS::S3::Bucket",
      Properties: {
        NotificationConfiguration: {
          LambdaConfigurations: [{ Event: "s3:ObjectCreated:*", Function: { "Fn::GetAtt": ["Fn", "Arn"] } }],
        },
      },
    },
    Fn: fn({
      Role: { "Fn::GetAtt": ["Role", "Arn"] },
      DeadLetterConfig: { TargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] } },
    }),
    Dlq: queue(),
    Role: role(statements),
    Locks: lockTable(),
    ...extra,
  };
}

describe("hand-made-lock-table", () => {
  it("reports the table an S3-triggered function writes, instead of s3-no-guard-table", () => {
    const findings = audit(lockStack());
    expect(pairs(findings)).toEqual(["hand-made-lock-table Locks"]);
    expect(findings[0]).toMatchObject({ severity: "error", resource: "Locks" });
    expect(findings[0]!.message).toMatch(
      /written by Fn on S3 events from Bucket, looks like a hand-made lock/,
    );
    expect(findings[0]!.message).toMatch(
      /without TimeToLiveSpecification a crashed holder keeps the lock forever/,
    );
    expect(findings[0]!.message).toMatch(
      /without a lease and fencing .* a slow holder can overwrite newer work/,
    );
  });

  it("with TTL says the crash half is covered (slowly) and the lease and fencing half is not", () => {
    const ttl = { TimeToLiveSpecification: { AttributeName: "lockExpiry", Enabled: true } };
    const [f] = audit(lockStack(undefined, { Locks: lockTable(ttl) }));
    expect(f!.message).toMatch(/TTL on lockExpiry frees a crashed holder's lock only when DynamoDB deletes/);
    expect(f!.message).not.toMatch(/without TimeToLiveSpecification/);
    expect(f!.message).toMatch(/without a lease and fencing/);
    const disabled = { TimeToLiveSpecification: { AttributeName: "lockExpiry", Enabled: false } };
    expect(audit(lockStack(undefined, { Locks: lockTable(disabled) }))[0]!.message).toMatch(
      /without TimeToLiveSpecification/,
    );
  });

  it.each([
    ["read-only actions", [statement(["dynamodb:GetItem", "dynamodb:Query"])]],
    ["a Deny", [statement(WRITES, undefined, "Deny")]],
    ["writes to another stack's table", [statement(WRITES, "arn:aws:dynamodb:eu-west-1:1:table/elsewhere")]],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's ${} syntax, not JavaScript's
    ["writes to an index only", [statement(WRITES, { "Fn::Sub": "${Locks.Arn}/index/*" })]],
  ])("%s: no lock, s3-no-guard-table as before", (_name, statements) => {
    expect(pairs(audit(lockStack(statements)))).toEqual(["s3-no-guard-table Bucket"]);
  });

  it.each([
    ["dynamodb:*", "*"],
    ["dynamodb:Put*", "arn:aws:dynamodb:eu-west-1:123456789012:table/*"],
    ["DynamoDB:batchWriteItem", { "Fn::GetAtt": ["Locks", "Arn"] }],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: as above
    ["*", { "Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${Locks}" }],
  ])("action %s on %j is a write", (action, resource) => {
    expect(pairs(audit(lockStack([statement(action, resource)])))).toEqual(["hand-made-lock-table Locks"]);
  });

  it("reads CDK's grant (an AWS::IAM::Policy naming the role) and a managed policy of the template", () => {
    const cdkGrant = {
      Type: "AWS::IAM::Policy",
      Properties: {
        PolicyDocument: {
          Statement: [statement(WRITES, [{ "Fn::GetAtt": ["Locks", "Arn"] }, { Ref: "AWS::NoValue" }])],
        },
        Roles: [{ Ref: "Role" }],
      },
    };
    expect(pairs(audit(lockStack([], { Grant: cdkGrant })))).toEqual(["hand-made-lock-table Locks"]);
    const managed = {
      Type: "AWS::IAM::ManagedPolicy",
      Properties: { PolicyDocument: { Statement: [statement(WRITES)] } },
    };
    const r = lockStack([], { Managed: managed });
    r.Role = { Type: "AWS::IAM::Role", Properties: { ManagedPolicyArns: [{ Ref: "Managed" }] } };
    expect(pairs(audit(r))).toEqual(["hand-made-lock-table Locks"]);
  });

  it("a table written only by a function S3 does not trigger is no lock of the S3 route", () => {
    const r = lockStack([]);
    r.Other = fn({ Role: { "Fn::GetAtt": ["OtherRole", "Arn"] } });
    r.OtherRole = role([statement(WRITES)]);
    expect(pairs(audit(r))).toEqual(["s3-no-guard-table Bucket"]);
  });

  it("a table tagged eonce:role (records) is not taken for a lock", () => {
    const tagged = lockTable({ Tags: [{ Key: "eonce:role", Value: "records" }] });
    expect(pairs(audit(lockStack(undefined, { Locks: tagged })))).toEqual(["s3-no-guard-table Bucket"]);
  });

  it("fires only where s3-no-guard-table would: a guard table or an eonce:state tag silences both", () => {
    expect(pairs(audit(lockStack(undefined, { State: guardTable() })))).toEqual([]);
    const r = lockStack();
    r.Fn!.Properties!.Tags = [{ Key: "eonce:state", Value: "external" }];
    expect(pairs(audit(r))).toEqual([]);
  });

  it("follows S3 → SQS → Lambda and S3 → EventBridge → Lambda (the blog's own wiring)", () => {
    const viaQueue = lockStack();
    viaQueue.Bucket!.Properties = {
      NotificationConfiguration: { QueueConfigurations: [{ Queue: { "Fn::GetAtt": ["Q", "Arn"] } }] },
    };
    viaQueue.Q = queue({
      VisibilityTimeout: 180,
      RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] }, maxReceiveCount: 5 },
    });
    viaQueue.M = mapping({ "Fn::GetAtt": ["Q", "Arn"] });
    expect(pairs(audit(viaQueue))).toEqual(["hand-made-lock-table Locks"]);
    const viaRule = lockStack();
    viaRule.Bucket = { Type: "AWS::S3::Bucket" };
    viaRule.Rule = {
      Type: "AWS::Events::Rule",
      Properties: {
        EventPattern: { source: ["aws.s3"] },
        Targets: [
          { Id: "t", Arn: { "Fn::GetAtt": ["Fn", "Arn"] }, DeadLetterConfig: { Arn: "arn:aws:sqs:x:1:d" } },
        ],
      },
    };
    const findings = audit(viaRule);
    expect(pairs(findings)).toEqual(["hand-made-lock-table Locks"]);
    expect(findings[0]!.message).toMatch(/on S3 events from Rule/);
  });

  it("a route whose function writes no table keeps s3-no-guard-table, naming only that target", () => {
    const r = lockStack();
    r.Bucket!.Properties = {
      NotificationConfiguration: {
        LambdaConfigurations: [
          { Function: { "Fn::GetAtt": ["Fn", "Arn"] } },
          { Function: { "Fn::GetAtt": ["Plain", "Arn"] } },
        ],
      },
    };
    r.Plain = fn({ DeadLetterConfig: { TargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] } } });
    const findings = audit(r);
    expect(pairs(findings)).toEqual(["hand-made-lock-table Locks", "s3-no-guard-table Bucket"]);
    expect(findings.find((f) => f.rule === "s3-no-guard-table")!.message).toMatch(
      /sends S3 events to Plain and/,
    );
  });

  it("follows S3 → SNS → SQS → Lambda (a fan-out topic)", () => {
    const r = lockStack();
    r.Bucket!.Properties = {
      NotificationConfiguration: { TopicConfigurations: [{ Topic: { Ref: "Topic" } }] },
    };
    r.Topic = { Type: "AWS::SNS::Topic" };
    r.Sub = {
      Type: "AWS::SNS::Subscription",
      Properties: { Protocol: "sqs", TopicArn: { Ref: "Topic" }, Endpoint: { "Fn::GetAtt": ["Q", "Arn"] } },
    };
    r.Q = queue({
      VisibilityTimeout: 180,
      RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] }, maxReceiveCount: 5 },
    });
    r.M = mapping({ "Fn::GetAtt": ["Q", "Arn"] });
    expect(pairs(audit(r))).toEqual(["hand-made-lock-table Locks"]);
  });

  it("a queue polled by two functions is a lock route only if both write a lock table", () => {
    const r = lockStack();
    r.Bucket!.Properties = {
      NotificationConfiguration: { QueueConfigurations: [{ Queue: { "Fn::GetAtt": ["Q", "Arn"] } }] },
    };
    r.Q = queue({
      VisibilityTimeout: 180,
      RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] }, maxReceiveCount: 5 },
    });
    r.M = mapping({ "Fn::GetAtt": ["Q", "Arn"] });
    r.Plain = fn();
    r.M2 = mapping({ "Fn::GetAtt": ["Q", "Arn"] }, { Ref: "Plain" });
    expect(pairs(audit(r))).toEqual(["s3-no-guard-table Bucket"]);
    r.Plain = fn({ Role: { "Fn::GetAtt": ["Role", "Arn"] } });
    expect(pairs(audit(r))).toEqual(["hand-made-lock-table Locks"]);
  });

  it("SAM: a DynamoDBCrudPolicy on the table's name is a write", () => {
    const text = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Locks:
    Type: AWS::Serverless::SimpleTable
    Properties:
      PrimaryKey: { Name: objectKey, Type: String }
  Uploads:
    Type: AWS::S3::Bucket
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Handler: index.handler
      DeadLetterQueue: { Type: SQS, TargetArn: arn:aws:sqs:eu-west-1:123456789012:dlq }
      Policies:
        - AWSLambdaBasicExecutionRole
        - DynamoDBCrudPolicy: { TableName: !Ref Locks }
      Events:
        Created: { Type: S3, Properties: { Bucket: !Ref Uploads, Events: "s3:ObjectCreated:*" } }
`;
    expect(auditTemplate(text).map((f) => `${f.rule} ${f.resource}`)).toEqual(["hand-made-lock-table Locks"]);
    expect(
      auditTemplate(text.replace("DynamoDBCrudPolicy", "DynamoDBReadPolicy")).map((f) => f.rule),
    ).toEqual(["s3-no-guard-table"]);
  });
});
