/**
 * The one region, account and key pair of the local AWS. DynamoDB Local and fauxqs accept any key pair; s3rver
 * accepts only its own (`S3RVER_CREDENTIALS` in emulators/s3-server.ts). fauxqs puts its account id in every queue
 * URL and ARN, so the Lambda ARNs and EventBridge envelopes use it too.
 */
export const LOCAL_REGION = "us-east-1";
export const LOCAL_ACCOUNT_ID = "000000000000";
export const LOCAL_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" } as const;
