import { Stack, Validations } from "aws-cdk-lib";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type { Construct, IConstruct } from "constructs";
import type { PipelineParts } from "./pipeline-parts.js";
import type { ResolvedProps } from "./resolve-props.js";

/**
 * cdk-nag (AwsSolutions, Serverless) findings the construct accepts on purpose, each with its reason. Recorded
 * with CDK's own `Validations.acknowledge`, so the construct needs no cdk-nag import.
 */
export function acknowledgeNagFindings(pipeline: PipelineParts, p: ResolvedProps): void {
  acknowledgeBuckets(pipeline, p);
  acknowledgeDeadLetterQueue(pipeline, p);
  acknowledgeFunction(pipeline);
  acknowledgeOutboxRelay(pipeline);
  acknowledgeCdkSingletons(Stack.of(pipeline));
}

function acknowledgeBuckets(pipeline: PipelineParts, p: ResolvedProps): void {
  const { inputBucket, outputBucket } = pipeline;
  if (!p.accessLogsBucket) {
    for (const bucket of [inputBucket, outputBucket]) {
      if (!bucket) continue;
      Validations.of(bucket).acknowledge({
        id: "AwsSolutions-S1",
        reason:
          "Server access logs are opt-in (accessLogsBucket): every object the pipeline touches is already " +
          "in the function's structured logs, and CloudTrail data events are the audit trail of choice.",
      });
    }
  }
  const policy = pipeline.role.node.tryFindChild("DefaultPolicy");
  if (!policy) return;
  const stack = Stack.of(pipeline);
  const id = (c: Construct) => stack.resolve((c.node.defaultChild as s3.CfnBucket).logicalId) as string;
  const objectArns: string[] = [];
  if (inputBucket && p.s3?.inputBucketRead) {
    objectArns.push(`<${id(inputBucket)}.Arn>/${p.s3.objectKeyPrefix ?? ""}*`);
  }
  if (outputBucket) objectArns.push(`<${id(outputBucket)}.Arn>/*`);
  if (p.dynamodb) {
    Validations.of(policy).acknowledge({
      id: "AwsSolutions-IAM5[Resource::*]",
      reason:
        "dynamodb:ListStreams, which the DynamoDB stream's event source mapping calls, has no resource-level " +
        "permission: IAM only accepts `*` for it. The stream's reads are granted on the source table's stream only.",
    });
  }
  for (const arn of objectArns) {
    Validations.of(policy).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${arn}]`,
      reason:
        "Object-level actions on the pipeline's own bucket: the keys are only known at run time " +
        "(the object in the event, the derived output key). No bucket-level or other bucket's access.",
    });
  }
}

function acknowledgeDeadLetterQueue(pipeline: PipelineParts, p: ResolvedProps): void {
  const reason = "This queue is the dead-letter queue itself: dead letters stay here until redriven.";
  if (!p.queue) {
    // cdk-nag recognizes a DLQ only by another queue's redrive policy, not as an on-failure destination.
    Validations.of(pipeline.deadLetterQueue).acknowledge({ id: "AwsSolutions-SQS3", reason });
  }
  // The Serverless pack, for users who run it too.
  Validations.of(pipeline.deadLetterQueue).acknowledge({ id: "Serverless-SQSRedrivePolicy", reason });
}

function acknowledgeFunction(pipeline: PipelineParts): void {
  Validations.of(pipeline.function).acknowledge(
    {
      id: "Serverless-LambdaDLQ",
      reason:
        "Failed async invokes go to the DLQ through an on-failure destination (it keeps the error and the " +
        "request context, a function DLQ does not); queued deliveries dead-letter by the queue's redrive policy, " +
        "stream deliveries by their mapping's on-failure destination.",
    },
    {
      id: "Serverless-LambdaTracing",
      reason:
        "X-Ray is off by default (it is billed per trace); every log line carries the delivery's " +
        "correlation id, which links a delivery's steps.",
    },
  );
  if (pipeline.queue) {
    Validations.of(pipeline.function).acknowledge({
      id: "Serverless-LambdaEventSourceMappingDestination",
      reason:
        "An SQS source dead-letters by its redrive policy (maxReceiveCount); event source mapping " +
        "on-failure destinations are for stream and Kafka sources.",
    });
  }
}

function acknowledgeOutboxRelay(pipeline: PipelineParts): void {
  const outbox = pipeline.outbox;
  if (!outbox) return;
  Validations.of(outbox.relay).acknowledge(
    {
      id: "Serverless-LambdaDLQ",
      reason:
        "The relay is invoked by its stream mapping only: batches it gives up on go to the mapping's on-failure " +
        "destination (the DLQ), and the entries stay in the outbox table.",
    },
    {
      id: "Serverless-LambdaTracing",
      reason:
        "X-Ray is off by default (it is billed per trace); each message carries its id in the relay's logs.",
    },
  );
  acknowledgeChild(outbox.relayRole, "DefaultPolicy", {
    id: "AwsSolutions-IAM5[Resource::*]",
    reason:
      "dynamodb:ListStreams, which the outbox table's stream mapping calls, has no resource-level permission: " +
      "IAM only accepts `*` for it. The stream's reads are granted on the outbox table's stream only.",
  });
  if (outbox.relayDeadLetterQueue !== pipeline.deadLetterQueue) {
    const reason =
      "This queue is the relay's dead-letter queue itself: dead letters stay here until redriven.";
    Validations.of(outbox.relayDeadLetterQueue).acknowledge(
      { id: "AwsSolutions-SQS3", reason },
      { id: "Serverless-SQSRedrivePolicy", reason },
    );
  }
}

/**
 * Findings on resources CDK itself adds to the stack (the S3 notifications handler and the auto-delete
 * provider): their code and policies are CDK's, not configurable here.
 */
function acknowledgeCdkSingletons(stack: Stack): void {
  acknowledgeChild(stack, "BucketNotificationsHandler050a0587b7544547bf325f094a3db834", {
    id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    reason:
      "CDK's singleton custom resource that writes bucket notification configurations: its role and " +
      "managed policy are set by aws-cdk-lib, not configurable here.",
  });
}

/** Acknowledges `finding` on `scope`'s child `childId` if CDK made it (a role's policy: once a grant adds one). */
function acknowledgeChild(scope: IConstruct, childId: string, finding: { id: string; reason: string }): void {
  const child = scope.node.tryFindChild(childId);
  if (child) Validations.of(child).acknowledge(finding);
}
