import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import * as opt from "../../core/options.js";

/** Where a command's DynamoDB requests go, on top of the AWS SDK's own configuration (environment, profile). */
export interface AwsConnection {
  /** DynamoDB endpoint (e.g. DynamoDB Local); default the SDK's configuration. */
  endpoint?: string;
  /** AWS region; default the SDK's configuration (AWS_REGION, the profile). */
  region?: string;
}

/** The `--endpoint` and `--region` flags of every command that reads a DynamoDB table (`eonce state`, `audit table`). */
export const AWS_CONNECTION_FIELDS = {
  endpoint: opt.string({
    pattern: /^https?:\/\/\S+$/,
    expected: "a URL (http or https), like http://127.0.0.1:8000",
    doc: "DynamoDB endpoint, e.g. DynamoDB Local (default: the AWS SDK's configuration)",
  }),
  region: opt.string({ doc: "AWS region (default: the AWS SDK's configuration: AWS_REGION, the profile)" }),
};

export const AWS_CONNECTION_OPTIONS = opt.schemaFor<AwsConnection>()(AWS_CONNECTION_FIELDS);

/** A client with the SDK's configuration, the endpoint and region given on top. */
export function dynamoDBClientFor(c: AwsConnection): DynamoDBClient {
  return new DynamoDBClient({
    ...(c.endpoint ? { endpoint: c.endpoint } : {}),
    ...(c.region ? { region: c.region } : {}),
  });
}
