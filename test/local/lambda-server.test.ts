import { InvokeCommand, type InvokeCommandInput, LambdaClient } from "@aws-sdk/client-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DurableExecutionConflictError } from "../../src/durable/errors.js";
import { startDurableExecution } from "../../src/durable/lambda-invoke.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../../src/local/aws-local.js";
import { type LocalLambdaServer, startLambdaServer } from "../../src/local/emulators/lambda-server.js";
import { LocalRuntime } from "../../src/local/runtime.js";

/** The real LambdaClient against the local Invoke endpoint: Lambda's name rules, its error shapes, the faults. */
let server: LocalLambdaServer;
let lambda: LambdaClient;
const client = (endpoint: string, maxAttempts = 1) =>
  new LambdaClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts });

beforeAll(async () => {
  server = await startLambdaServer({ functions: ["workflow", "other"] });
  lambda = client(server.endpoint);
});
afterAll(async () => {
  lambda.destroy();
  await server.stop();
});

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const invoke = (input: Partial<InvokeCommandInput>) =>
  lambda.send(
    new InvokeCommand({
      FunctionName: "workflow:live",
      InvocationType: "Event",
      Payload: encode({ n: 1 }),
      ...input,
    }),
  );
/** The error a send rejects with (fails the test when it resolves). */
const refusal = async (input: Partial<InvokeCommandInput>) => {
  const error = await invoke(input).then(
    () => undefined,
    (e: unknown) => e as Error & { $metadata?: { httpStatusCode?: number }; $fault?: string },
  );
  if (!error) throw new Error("the Invoke was not refused");
  return error;
};

describe("the local Lambda Invoke endpoint", () => {
  it("listens on 127.0.0.1 only", () => {
    expect(server.address).toBe("127.0.0.1");
    expect(server.endpoint).toBe(`http://127.0.0.1:${server.port}`);
  });

  it("starts an execution: 202 and its ARN; the same name and payload answer the same execution", async () => {
    const first = await invoke({ DurableExecutionName: "order-1_v1", Payload: encode({ order: 1 }) });
    expect(first.StatusCode).toBe(202);
    expect(first.DurableExecutionArn).toMatch(
      /^arn:aws:lambda:us-east-1:000000000000:function:workflow:live\/durable-execution\/order-1_v1\/[a-f0-9]+$/,
    );
    const again = await invoke({ DurableExecutionName: "order-1_v1", Payload: encode({ order: 1 }) });
    expect(again).toMatchObject({ StatusCode: 202, DurableExecutionArn: first.DurableExecutionArn });
    const started = server.starts.filter((s) => s.name === "order-1_v1");
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      functionName: "workflow",
      qualifier: "live",
      named: true,
      payload: JSON.stringify({ order: 1 }),
    });
    expect(server.invokes.filter((i) => i.name === "order-1_v1").map((i) => i.outcome)).toEqual([
      "started",
      "existing",
    ]);
  });

  it("refuses the same name with another payload: DurableExecutionAlreadyStartedException, by name", async () => {
    await invoke({ DurableExecutionName: "order-2_v1", Payload: encode({ order: 2 }) });
    const error = await refusal({
      DurableExecutionName: "order-2_v1",
      Payload: encode({ order: 2, late: true }),
    });
    expect(error.name).toBe("DurableExecutionAlreadyStartedException");
    expect(error.$metadata?.httpStatusCode).toBe(409);
    expect(error.message).toMatch(/order-2_v1/);
    expect(server.starts.filter((s) => s.name === "order-2_v1")).toHaveLength(1);
    // The dispatcher's own start turns it into its typed conflict.
    await expect(
      startDurableExecution(lambda, {
        FunctionName: "workflow:live",
        InvocationType: "Event",
        DurableExecutionName: "order-2_v1",
        Payload: encode({ order: 2, other: true }),
      }),
    ).rejects.toBeInstanceOf(DurableExecutionConflictError);
  });

  it("refuses a name outside 1–64 of [A-Za-z0-9_-] with ValidationException, and starts nothing", async () => {
    for (const name of ["has space", "a".repeat(65), "dot.ted", ""]) {
      const error = await refusal({ DurableExecutionName: name });
      expect(error.name, JSON.stringify(name)).toBe("ValidationException");
      expect(error.$metadata?.httpStatusCode).toBe(400);
    }
    expect(server.starts.some((s) => s.name === "has space" || s.name === "")).toBe(false);
  });

  it("refuses an unknown function (ResourceNotFoundException), an unqualified one, a disagreeing qualifier, non-JSON", async () => {
    const missing = await refusal({ FunctionName: "nope:live", DurableExecutionName: "x" });
    expect(missing.name).toBe("ResourceNotFoundException");
    expect(missing.$metadata?.httpStatusCode).toBe(404);
    expect(missing.message).toMatch(/function:nope:live/);
    const unqualified = await refusal({ FunctionName: "workflow", DurableExecutionName: "x" });
    expect(unqualified.name).toBe("InvalidParameterValueException");
    expect(unqualified.message).toMatch(/unqualified/);
    const disagree = await refusal({
      FunctionName: "workflow:live",
      Qualifier: "v2",
      DurableExecutionName: "x",
    });
    expect(disagree.name).toBe("InvalidParameterValueException");
    const text = await refusal({ DurableExecutionName: "x", Payload: new TextEncoder().encode("not json") });
    expect(text.name).toBe("InvalidRequestContentException");
    expect(server.starts.some((s) => s.name === "x")).toBe(false);
  });

  it("takes the function as a name with Qualifier, a partial ARN or an ARN", async () => {
    await invoke({ FunctionName: "other", Qualifier: "3", DurableExecutionName: "q1" });
    await invoke({ FunctionName: "000000000000:function:other:3", DurableExecutionName: "q2" });
    await invoke({
      FunctionName: "arn:aws:lambda:us-east-1:000000000000:function:other:3",
      DurableExecutionName: "q3",
    });
    const starts = server.starts.filter((s) => s.name.startsWith("q"));
    expect(starts.map((s) => [s.functionName, s.qualifier])).toEqual([
      ["other", "3"],
      ["other", "3"],
      ["other", "3"],
    ]);
  });

  it("injects seeded faults: a failure before the start, an answer lost after it; the SDK's retries find the start", async () => {
    const faulty = await startLambdaServer({ seed: 7, faults: { failRate: 0.3, lostRate: 0.3 } });
    const retrying = client(faulty.endpoint, 10);
    try {
      for (let i = 0; i < 20; i++) {
        const out = await retrying.send(
          new InvokeCommand({
            FunctionName: "workflow:live",
            InvocationType: "Event",
            DurableExecutionName: `e-${i}`,
            Payload: encode({ i }),
          }),
        );
        expect(out.DurableExecutionArn).toBe(faulty.starts.find((s) => s.name === `e-${i}`)?.arn);
      }
      expect(faulty.starts).toHaveLength(20);
      const outcomes = faulty.invokes.map((i) => (i.lost ? "lost" : i.outcome));
      expect(outcomes).toContain("failed-before");
      expect(outcomes).toContain("lost");
      // A lost answer's retry finds the execution it started: the same name, the same payload.
      expect(outcomes).toContain("existing");
      expect(faulty.invokes.filter((i) => i.outcome === "started")).toHaveLength(20);
    } finally {
      retrying.destroy();
      await faulty.stop();
    }
  });

  it("is the runtime's on asking: env() points an unchanged LambdaClient({}) at it (AWS_ENDPOINT_URL_LAMBDA)", async () => {
    const runtime = await LocalRuntime.start({
      services: { dynamodb: false, s3: false, sqs: false, lambda: true },
    });
    const restore = runtime.setEnv();
    const plain = new LambdaClient({});
    try {
      expect(runtime.env().AWS_ENDPOINT_URL_LAMBDA).toBe(runtime.lambda?.endpoint);
      const out = await plain.send(
        new InvokeCommand({
          FunctionName: "workflow:live",
          InvocationType: "Event",
          DurableExecutionName: "from-env",
          Payload: encode({}),
        }),
      );
      expect(out.DurableExecutionArn).toBe(runtime.lambda?.starts[0]?.arn);
    } finally {
      plain.destroy();
      restore();
      await runtime.stop();
    }
  });
});
