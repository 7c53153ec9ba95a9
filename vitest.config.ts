import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    // One DynamoDB Local for the whole run, started and stopped here (test/global-setup.ts).
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2 cores: DynamoDB Local (Java) needs one of them.
    maxWorkers: 2,
  },
});
