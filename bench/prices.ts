/**
 * Prices used to turn consumed capacity and Lambda duration into money. US East (N. Virginia), DynamoDB Standard
 * table class, on demand; looked up 2026-11-25 (docs/benchmarks.md cites the sources). Update both together.
 */
export const PRICES = {
  date: "2026-11-25",
  region: "us-east-1",
  /** USD per million write request units (on demand, since the November 2024 reduction). */
  dynamodbWriteRequestUnitPerMillionUsd: 0.625,
  /** USD per million read request units (on demand). */
  dynamodbReadRequestUnitPerMillionUsd: 0.125,
  /** USD per GB-second of Lambda duration (x86, first tier). */
  lambdaGbSecondUsd: 0.0000166667,
  /** USD per million Lambda requests (invocations). */
  lambdaRequestPerMillionUsd: 0.2,
  /** Memory the Lambda duration cost is quoted at. */
  lambdaMemoryMb: 1024,
  sources: [
    "https://airbyte.com/data-engineering-resources/dynamodb-pricing (DynamoDB on-demand, US East, dated 2025-07-21)",
    "https://cloudchipr.com/blog/aws-lambda-pricing (Lambda duration, x86, US East; requests)",
  ],
} as const;

/** DynamoDB on-demand cost of one million events that each consume `wcu` and `rcu`, in USD. */
export function dynamodbCostPerMillionUsd(wcu: number, rcu: number): number {
  return (
    wcu * PRICES.dynamodbWriteRequestUnitPerMillionUsd + rcu * PRICES.dynamodbReadRequestUnitPerMillionUsd
  );
}

/** Lambda duration cost of adding `ms` to each of one million invocations, in USD (1 ms billing granularity). */
export function lambdaCostPerMillionUsd(ms: number): number {
  return (PRICES.lambdaMemoryMb / 1024) * (Math.max(0, ms) / 1000) * PRICES.lambdaGbSecondUsd * 1e6;
}
