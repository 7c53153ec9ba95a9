import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { EventBridgeEvent, S3Event, SQSEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { guardedImagesHandler } from "../../examples/images/handler.js";
import { classify, pictures } from "../../examples/images/pictures.js";
import { localStateStore, quietObservability } from "../../examples/shared/demo-kit.js";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { freePort } from "../../src/local/emulators/free-port.js";
import { LocalRuntime } from "../../src/local/runtime.js";
import type { TraceEvent } from "../../src/sim/live/trace.js";
import { parseInvocation } from "../../src/sources/parse-invocation.js";

let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await LocalRuntime.start({ dynamodbEndpoint: inject("dynamodbEndpoint"), seed: 5 });
});

afterAll(async () => {
  await runtime?.stop();
});

const keyOf = (input: unknown) => {
  const e = parseInvocation(input)[0]?.events[0];
  return e?.kind === "s3" ? e.key : undefined;
};

describe("local runtime", () => {
  it("binds every server to 127.0.0.1 and points the SDK's default endpoints at them", () => {
    const env = runtime.env();
    for (const name of ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"]) {
      expect(env[name]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    }
    expect(runtime.s3?.address).toBe("127.0.0.1");
    expect(runtime.sqs?.address).toBe("127.0.0.1");
  });

  it("delivers an upload directly, via EventBridge and via SQS to an unchanged handler using default clients", async () => {
    const got: Record<string, string[]> = { direct: [], eventbridge: [], sqs: [] };
    const restore = runtime.setEnv();
    try {
      // The handler builds its client the way it would on AWS: no endpoint, no credentials in code.
      const s3 = new S3Client({});
      const reader = (route: string) => async (event: unknown) => {
        const inputs =
          route === "sqs"
            ? (event as SQSEvent).Records.map((r) => JSON.parse(r.body))
            : [event as S3Event | EventBridgeEvent<string, unknown>];
        for (const input of inputs) {
          const key = keyOf(input) ?? "?";
          const out = await s3.send(new GetObjectCommand({ Bucket: `rt-${route}`, Key: key }));
          got[route]?.push(`${key}=${await out.Body?.transformToString()}`);
        }
      };
      for (const route of ["direct", "eventbridge", "sqs"] as const) {
        await runtime.createBucket(`rt-${route}`);
        const fn = runtime.fn({ name: `rt-${route}`, handler: reader(route) });
        if (route === "sqs") {
          const queue = await runtime.createQueue("rt-queue", { visibilityTimeoutS: 5 });
          runtime.notify(`rt-${route}`, { via: "sqs", queueUrl: queue.url });
          runtime.sqsEventSource(fn, { queueUrl: queue.url, queueArn: queue.arn });
        } else {
          runtime.notify(`rt-${route}`, { via: route, function: fn });
        }
        await runtime
          .s3Client()
          .send(new PutObjectCommand({ Bucket: `rt-${route}`, Key: "a b+c.txt", Body: route }));
      }
      await runtime.idle();
      s3.destroy();
    } finally {
      restore();
    }
    expect(got).toEqual({
      direct: ["a b+c.txt=direct"],
      eventbridge: ["a b+c.txt=eventbridge"],
      sqs: ["a b+c.txt=sqs"],
    });
  });

  it("frees a key held by a crashed run once its lease expires (guarded images handler)", async () => {
    const s3 = runtime.s3Client();
    await runtime.createBucket("rt-img-in");
    await runtime.createBucket("rt-img-out");
    const handler = guardedImagesHandler({
      s3,
      outputBucket: "rt-img-out",
      store: await localStateStore({ runtime }, "rt-img-state"),
      options: { ...quietObservability(), leaseMs: 800, heartbeatMs: 200, deadlineMarginMs: 300 },
    });
    // Every first attempt crashes after reading, while it holds the key; retries run clean.
    const fn = runtime.fn({ name: "rt-img", handler, timeoutMs: 3000, faults: { crashRate: 1 } });
    runtime.notify("rt-img-in", {
      via: "eventbridge",
      function: fn,
      asyncInvoke: { retryDelaysMs: [100, 200] },
    });
    const { dog } = await pictures();
    const from = runtime.trace.events.length;
    await s3.send(new PutObjectCommand({ Bucket: "rt-img-in", Key: "pet.png", Body: dog }));
    await runtime.idle();
    const events = runtime.trace.events.slice(from) as TraceEvent[];
    const runs = events
      .filter((e) => e.type === "run" && e.functionName === "rt-img")
      .map((e) => (e.type === "run" ? e.status : ""));
    expect(runs[0]).toBe("crashed");
    const steps = events.flatMap((e) =>
      e.type === "guard" && e.key === "o#rt-img-in/pet.png" ? [e.step] : [],
    );
    // The retry waited for the crashed holder's lease and took the claim over, then committed.
    expect(steps).toContain("took-over");
    expect(steps.at(-1)).toBe("committed");
    const out = await s3.send(new GetObjectCommand({ Bucket: "rt-img-out", Key: "out-pet.png" }));
    expect(await classify(Buffer.from(await out.Body!.transformToByteArray()))).toBe("inverted-dog");
  });
});

// This suite and the next side by side (consecutive concurrent suites): each starts a DynamoDB Local of its own, on
// its own ports, and waits on it.
describe.concurrent("stopping", () => {
  it("stops its servers (DynamoDB Local included) and removes their files on SIGINT", async () => {
    const script = `
      import { LocalRuntime } from "./src/local/runtime.ts";
      const rt = await LocalRuntime.start({ handleSignals: true });
      console.log(JSON.stringify({ ddb: rt.dynamodb.endpoint, dir: rt.s3.directory }));
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: process.cwd(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const first = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0] ?? "");
      });
      child.on("exit", (code) => reject(new Error(`exited ${code} before starting`)));
    });
    const { ddb, dir } = JSON.parse(first) as { ddb: string; dir: string };
    expect(existsSync(dir)).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(existsSync(dir)).toBe(false);
    const probe = dynamoDBClient(ddb);
    try {
      await expect(probe.send(new ListTablesCommand({}))).rejects.toThrow();
    } finally {
      probe.destroy();
    }
  }, 60_000);
});

describe.concurrent("local runtime start-up failure", () => {
  /** Whether something accepts connections on 127.0.0.1:port. */
  const listening = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = connect({ port, host: "127.0.0.1" });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });

  /** Pids of DynamoDB Local processes started for `port` (Linux: /proc). */
  const jvmsOnPort = (port: number): number[] =>
    readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .filter((pid) => {
        try {
          const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
          return args.includes("DynamoDBLocal.jar") && args[args.indexOf("-port") + 1] === String(port);
        } catch {
          return false; // exited meanwhile
        }
      })
      .map(Number);

  it.skipIf(process.platform !== "linux")(
    "stops the servers that finished starting after another one failed",
    async () => {
      // S3 fails at once (its port is taken); fauxqs and the DynamoDB Local JVM finish starting later.
      const blocker = createServer();
      await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
      const taken = (blocker.address() as AddressInfo).port;
      const ports = { dynamodb: await freePort(), sqs: await freePort(), s3: taken };
      try {
        await expect(LocalRuntime.start({ ports })).rejects.toThrow(/EADDRINUSE/);
        // No JVM left for this port, not even one still starting (it would listen once up, for ever).
        expect(jvmsOnPort(ports.dynamodb)).toEqual([]);
        expect(await listening(ports.dynamodb)).toBe(false);
        expect(await listening(ports.sqs)).toBe(false);
      } finally {
        blocker.close();
        // If the check failed, do not leave the JVM this test caused running.
        for (const pid of jvmsOnPort(ports.dynamodb)) process.kill(pid, "SIGKILL");
      }
    },
    60_000,
  );

  it("names Java 17 when there is no java to run DynamoDB Local, before starting anything", () => {
    expect(() => LocalRuntime.preflight({ javaPath: "/nonexistent/bin/java" })).toThrow(
      /DynamoDB Local needs Java 17 or later.*\/nonexistent\/bin\/java/,
    );
    expect(() => LocalRuntime.preflight({ dynamodbEndpoint: "http://127.0.0.1:1" })).not.toThrow();
  });
});
