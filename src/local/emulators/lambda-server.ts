/**
 * A local Lambda Invoke endpoint for durable starts: a small `node:http` server on 127.0.0.1 that speaks the one
 * operation a durable dispatcher sends, `Invoke` (REST-JSON, as `@aws-sdk/client-lambda` sends it:
 * `POST /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=]`, headers `X-Amz-Invocation-Type` and
 * `X-Amz-Durable-Execution-Name`, the payload as the body), and keeps durable execution names as Lambda does:
 *
 * - a new name starts an execution: 202, its ARN in `X-Amz-Durable-Execution-Arn`;
 * - the same name with the same payload (byte for byte) answers the existing execution (202, the same ARN);
 * - the same name with another payload: 409 `DurableExecutionAlreadyStartedException`;
 * - a name outside 1–64 of `[a-zA-Z0-9-_]`: 400 `ValidationException`; an unqualified function (durable functions
 *   are invoked with a version or alias): 400 `InvalidParameterValueException`; a payload that is not JSON: 400
 *   `InvalidRequestContentException`; a function outside `functions` (when given): 404 `ResourceNotFoundException`.
 *
 * Errors carry Lambda's shape (`x-amzn-ErrorType` header, JSON body with `Type` and `Message`), so the real SDK
 * client raises the modelled exception (or, for `ValidationException`, which the SDK does not model, a
 * `LambdaServiceException` with that `name`). Every function is taken for a durable one; `Event` is the only
 * invocation type it starts (`DryRun` answers 204; `RequestResponse`, waiting for the execution, is not served).
 * Signatures are not checked (the local key pair of aws-local.ts is what the handler's environment carries).
 *
 * Every start is recorded (name, function, qualifier, payload, time, order), and every request with its outcome.
 * Seeded faults: an Invoke that fails before its start lands (500 `ServiceException`: nothing started), or one
 * whose answer is lost after the start landed (the connection drops: the SDK and the dispatcher send it again).
 */

import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { DURABLE_EXECUTION_NAME_PATTERN } from "../../durable/execution-name.js";
import { createPrng, type Prng } from "../../sim/prng.js";
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from "../aws-local.js";
import { header, readBody, startHttpServer } from "./http-server.js";
import type { LocalServer } from "./local-server.js";

/** One durable execution the endpoint started, in start order. */
export interface DurableStart {
  /** 1 for the first start of the server, then 2, 3, …. */
  order: number;
  /** The `DurableExecutionName` (or the one the endpoint made up when the Invoke carried none). */
  name: string;
  /** False when the Invoke named no execution. */
  named: boolean;
  /** The function's name (from a name, a partial ARN or an ARN). */
  functionName: string;
  qualifier: string;
  /** The execution's ARN, as answered. */
  arn: string;
  /** The payload, as UTF-8 text. */
  payload: string;
  atMs: number;
}

/** How one Invoke request ended. */
export type InvokeOutcome =
  /** A new execution started. */
  | "started"
  /** Same name, same payload: the existing execution was answered. */
  | "existing"
  /** Same name, another payload: `DurableExecutionAlreadyStartedException`. */
  | "conflict"
  /** Refused for the request's own fault (name, qualifier, payload, function): a 4xx. */
  | "rejected"
  /** An injected failure before the start: 500, nothing started. */
  | "failed-before"
  /** `DryRun`: 204, nothing started. */
  | "dry-run";

/** One request to the endpoint. */
export interface InvokeRecord {
  atMs: number;
  functionName: string;
  qualifier: string | null;
  name: string | null;
  invocationType: string;
  outcome: InvokeOutcome;
  /** The error answered (`rejected`, `conflict`, `failed-before`). */
  error?: string;
  /** The answer was dropped after the start landed (an injected fault): the caller saw a reset connection. */
  lost: boolean;
}

/** Seeded faults of the endpoint: shares of Invoke requests in [0, 1]. */
export interface InvokeFaults {
  /** Fail before the start lands (500 `ServiceException`). */
  failRate?: number;
  /** Drop the answer after the start landed (or after answering the existing execution). */
  lostRate?: number;
}

export interface StartLambdaServerOptions {
  /** Default: a port the OS picks. */
  port?: number;
  /** Seed of the fault decisions. Default 1. */
  seed?: number;
  faults?: InvokeFaults;
  /** The functions that exist (names, without qualifier); default: every name does. */
  functions?: readonly string[];
}

/** The local Lambda Invoke endpoint: what it started and was asked, and its faults. */
export interface LocalLambdaServer extends LocalServer {
  /** Every execution started, in start order. */
  readonly starts: readonly DurableStart[];
  /** Every Invoke request, in arrival order. */
  readonly invokes: readonly InvokeRecord[];
  /** Calls `listener` for each new start, once it is recorded and before it is answered; returns an unsubscribe. */
  onStart(listener: (start: DurableStart) => void): () => void;
  /** Sets the fault shares from now on. */
  injectFaults(faults: InvokeFaults): void;
}

/** A function's name, as Lambda takes it (without account or qualifier). */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const QUALIFIER = /^(\$LATEST(\.PUBLISHED)?|[A-Za-z0-9_-]{1,128})$/;
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
/** Lambda's limit of an asynchronous invocation's payload. */
const MAX_EVENT_PAYLOAD = 1024 * 1024;

/** An answer the endpoint refuses with: Lambda's error shape. */
class LambdaError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly fault: "User" | "Service" = "User",
  ) {
    super(message);
  }
}

/** Starts the endpoint on 127.0.0.1. */
export async function startLambdaServer(options: StartLambdaServerOptions = {}): Promise<LocalLambdaServer> {
  const state = new LambdaState(options);
  const server = await startHttpServer(
    options.port ?? 0,
    (req, res) => state.handle(req, res),
    (res, error) => answerError(res, new LambdaError(500, "ServiceException", String(error), "Service")),
  );
  return {
    ...server,
    starts: state.starts,
    invokes: state.invokes,
    onStart: (listener) => state.onStart(listener),
    injectFaults: (faults) => state.setFaults(faults),
  };
}

/** The request as the endpoint reads it. */
interface InvokeRequest {
  functionName: string;
  qualifier: string | null;
  name: string | null;
  invocationType: string;
  payload: Buffer;
}

/** What the endpoint keeps: the executions by function and name, the records, the fault stream. */
class LambdaState {
  readonly starts: DurableStart[] = [];
  readonly invokes: InvokeRecord[] = [];
  readonly #byName = new Map<string, DurableStart>();
  readonly #listeners = new Set<(start: DurableStart) => void>();
  readonly #functions: ReadonlySet<string> | undefined;
  readonly #prng: Prng;
  #faults: Required<InvokeFaults> = { failRate: 0, lostRate: 0 };

  constructor(options: StartLambdaServerOptions) {
    this.#prng = createPrng(options.seed ?? 1).fork("lambda-invoke");
    this.#functions = options.functions ? new Set(options.functions) : undefined;
    this.setFaults(options.faults ?? {});
  }

  setFaults(faults: InvokeFaults): void {
    const failRate = faults.failRate ?? 0;
    const lostRate = faults.lostRate ?? 0;
    const share = (v: number) => Number.isFinite(v) && v >= 0 && v <= 1;
    if (!share(failRate) || !share(lostRate) || failRate + lostRate > 1) {
      throw new RangeError("invoke fault rates are shares in [0, 1] whose sum is at most 1");
    }
    this.#faults = { failRate, lostRate };
  }

  onStart(listener: (start: DurableStart) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = INVOKE_PATH.exec(url.pathname);
    if (req.method !== "POST" || !path?.[1]) {
      const what = `${req.method} ${url.pathname}`;
      const message = `the local Lambda endpoint serves Invoke only (POST /2015-03-31/functions/{FunctionName}/invocations), not ${what}`;
      return answerError(res, new LambdaError(404, "UnknownOperationException", message));
    }
    const raw = decodeURIComponent(path[1]);
    const request: InvokeRequest = {
      functionName: raw,
      qualifier: url.searchParams.get("Qualifier"),
      name: header(req, "x-amz-durable-execution-name") ?? null,
      invocationType: header(req, "x-amz-invocation-type") ?? "RequestResponse",
      payload: body,
    };
    // One draw per request, whatever it asks: the fault stream does not depend on what came before.
    const u = this.#prng.next();
    try {
      Object.assign(request, parseFunction(raw, request.qualifier));
      this.#check(request);
      this.#answer(request, u, res);
    } catch (error) {
      if (!(error instanceof LambdaError)) throw error;
      const outcome =
        error.type === "DurableExecutionAlreadyStartedException"
          ? "conflict"
          : error.type === "ServiceException"
            ? "failed-before"
            : "rejected";
      this.#record(request, outcome, { error: `${error.type}: ${error.message}` });
      answerError(res, error);
    }
  }

  /** A checked request: a dry run, an injected failure, or the start (or the existing execution), maybe lost. */
  #answer(request: InvokeRequest, u: number, res: ServerResponse): void {
    if (request.invocationType === "DryRun") {
      this.#record(request, "dry-run");
      res.writeHead(204, { "x-amzn-RequestId": requestId() }).end();
      return;
    }
    if (u < this.#faults.failRate) {
      throw new LambdaError(
        500,
        "ServiceException",
        "injected failure before the start (eonce run)",
        "Service",
      );
    }
    const { start, outcome } = this.#start(request);
    const lost = u < this.#faults.failRate + this.#faults.lostRate;
    this.#record(request, outcome, { lost });
    // The start has landed: a lost answer drops the connection instead of answering.
    if (lost) {
      res.destroy();
      return;
    }
    res
      .writeHead(202, {
        "x-amzn-RequestId": requestId(),
        "X-Amz-Durable-Execution-Arn": start.arn,
        "X-Amz-Executed-Version": start.qualifier,
        "Content-Length": "0",
      })
      .end();
  }

  #record(r: InvokeRequest, outcome: InvokeOutcome, extra: Partial<InvokeRecord> = {}): void {
    this.invokes.push({
      atMs: Date.now(),
      functionName: r.functionName,
      qualifier: r.qualifier,
      name: r.name,
      invocationType: r.invocationType,
      outcome,
      lost: false,
      ...extra,
    });
  }

  /** The request's own faults, as Lambda refuses them. */
  #check(r: InvokeRequest): void {
    if (!FUNCTION_NAME.test(r.functionName)) {
      throw validation(r.functionName, "functionName", "[a-zA-Z0-9-_]+ of 1 to 64 characters");
    }
    if (r.qualifier === null) {
      throw new LambdaError(
        400,
        "InvalidParameterValueException",
        "You cannot invoke a durable function using an unqualified ARN.",
      );
    }
    if (!QUALIFIER.test(r.qualifier)) throw validation(r.qualifier, "qualifier", QUALIFIER.source);
    if (this.#functions && !this.#functions.has(r.functionName)) {
      throw new LambdaError(404, "ResourceNotFoundException", `Function not found: ${functionArn(r)}`);
    }
    if (r.name !== null && !DURABLE_EXECUTION_NAME_PATTERN.test(r.name)) {
      throw validation(r.name, "durableExecutionName", "[a-zA-Z0-9-_]+ of 1 to 64 characters");
    }
    if (!["Event", "DryRun"].includes(r.invocationType)) {
      throw new LambdaError(
        400,
        "InvalidParameterValueException",
        `the local Lambda endpoint (eonce run) starts durable executions with InvocationType Event only, not ${r.invocationType}`,
      );
    }
    if (r.payload.length > MAX_EVENT_PAYLOAD) {
      throw new LambdaError(
        413,
        "RequestTooLargeException",
        `Request must be smaller than ${MAX_EVENT_PAYLOAD} bytes for the Invoke operation`,
      );
    }
    if (r.payload.length > 0 && !isJson(r.payload)) {
      throw new LambdaError(400, "InvalidRequestContentException", "Could not parse request body into json");
    }
  }

  /** Starts the execution, or finds the one of this name; throws the conflict. */
  #start(r: InvokeRequest): { start: DurableStart; outcome: "started" | "existing" } {
    const payload = r.payload.toString("utf8");
    const name = r.name ?? `unnamed-${this.starts.length + 1}-${digest(payload).slice(0, 12)}`;
    const key = `${r.functionName}\n${name}`;
    const existing = this.#byName.get(key);
    if (existing) {
      if (existing.payload === payload) return { start: existing, outcome: "existing" };
      throw new LambdaError(
        409,
        "DurableExecutionAlreadyStartedException",
        `Durable execution with name ${name} already exists with a different input`,
      );
    }
    const qualifier = r.qualifier ?? "$LATEST";
    const order = this.starts.length + 1;
    const start: DurableStart = {
      order,
      name,
      named: r.name !== null,
      functionName: r.functionName,
      qualifier,
      arn: `${functionArn(r)}/durable-execution/${name}/${digest(`${key}\n${order}`).slice(0, 32)}`,
      payload,
      atMs: Date.now(),
    };
    this.#byName.set(key, start);
    this.starts.push(start);
    for (const listener of this.#listeners) listener(start);
    return { start, outcome: "started" };
  }
}

/**
 * `FunctionName` as Lambda takes it: `name`, `name:qualifier`, `123456789012:function:name[:qualifier]` or
 * `arn:aws:lambda:region:123456789012:function:name[:qualifier]`; the `Qualifier` query parameter must agree.
 */
function parseFunction(
  raw: string,
  query: string | null,
): { functionName: string; qualifier: string | null } {
  const parts = raw.split(":");
  let name: string;
  let qualifier: string | undefined;
  if (raw.startsWith("arn:")) [name = "", qualifier] = parts.slice(6);
  else if (/^\d{12}:function:/.test(raw)) [name = "", qualifier] = parts.slice(2);
  else [name = "", qualifier] = parts;
  if (qualifier !== undefined && query !== null && qualifier !== query) {
    throw new LambdaError(
      400,
      "InvalidParameterValueException",
      "The derived qualifier from the function name does not match the specified qualifier.",
    );
  }
  return { functionName: name, qualifier: qualifier ?? query ?? null };
}

function functionArn(r: { functionName: string; qualifier: string | null }): string {
  const base = `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:${r.functionName}`;
  return r.qualifier === null ? base : `${base}:${r.qualifier}`;
}

function validation(value: string, member: string, constraint: string): LambdaError {
  return new LambdaError(
    400,
    "ValidationException",
    `1 validation error detected: Value '${value}' at '${member}' failed to satisfy constraint: Member must satisfy ${constraint}`,
  );
}

/** Lambda's error answer: the type in `x-amzn-ErrorType` (read first by the SDK), `Type` and `Message` in the body. */
function answerError(res: ServerResponse, error: LambdaError): void {
  const body = JSON.stringify({ Type: error.fault, Message: error.message });
  res
    .writeHead(error.status, {
      "x-amzn-RequestId": requestId(),
      "x-amzn-ErrorType": error.type,
      "Content-Type": "application/json",
      "Content-Length": String(Buffer.byteLength(body)),
    })
    .end(body);
}

function isJson(body: Buffer): boolean {
  try {
    JSON.parse(body.toString("utf8"));
    return true;
  } catch {
    return false;
  }
}

function digest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

let requests = 0;
function requestId(): string {
  requests++;
  return `00000000-0000-4000-8000-${requests.toString(16).padStart(12, "0")}`;
}
