/**
 * The one region, account and key pair of the local AWS, for the runtime's own clients and the handler's environment
 * alike. s3rver accepts only its hard-coded pair (it does not verify signatures), so that is the pair. DynamoDB
 * Local and fauxqs accept any, but a DynamoDB Local started without `-sharedDb` keeps one database per access key
 * and region: a table the runtime creates with one pair is not there for a client with another. fauxqs puts its
 * account id in every queue URL and ARN, so the Lambda ARNs and EventBridge envelopes use it too.
 */
export const LOCAL_REGION = "us-east-1";
export const LOCAL_ACCOUNT_ID = "000000000000";
export const LOCAL_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const;
