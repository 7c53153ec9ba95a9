import { OptionsError } from "../core/errors.js";
import { DurableExecutionConflictError, DurableStartError } from "./errors.js";

/** The Invoke request the dispatcher sends (a subset of `@aws-sdk/client-lambda`'s `InvocationRequest`). */
export interface DurableInvokeInput {
  FunctionName: string;
  /** `Event`: the dispatcher returns once Lambda has the execution, without waiting for it to end. */
  InvocationType: "Event";
  DurableExecutionName: string;
  Payload: Uint8Array;
  Qualifier?: string;
}

/** What the dispatcher reads of Lambda's answer. */
export interface DurableInvokeOutput {
  StatusCode?: number;
  DurableExecutionArn?: string;
}

/**
 * The client the dispatcher invokes with: a `LambdaClient` of `@aws-sdk/client-lambda` (which the durable execution
 * SDK depends on), or a fake in tests. Each Invoke is sent as an `InvokeCommand`, so a fake reads `command.input`.
 */
export interface LambdaInvoker {
  /** Sends one command (here always an `InvokeCommand`), aborted with `options.abortSignal`. */
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's overloads of send differ per command; only InvokeCommand is sent
  send(command: any, options?: { abortSignal?: AbortSignal }): Promise<any>;
}

/** `InvokeCommand`, loaded on the first Invoke so that importing the dispatcher loads no Lambda SDK. */
type InvokeCommandClass = new (input: DurableInvokeInput) => { readonly input: DurableInvokeInput };
let invokeCommand: Promise<InvokeCommandClass> | undefined;

function loadInvokeCommand(): Promise<InvokeCommandClass> {
  invokeCommand ??= import("@aws-sdk/client-lambda").then(
    (m) => m.InvokeCommand as unknown as InvokeCommandClass,
    (cause) => {
      invokeCommand = undefined; // an install fixes it without a restart
      throw new OptionsError(
        "the durable dispatcher needs @aws-sdk/client-lambda (an optional peer): npm install @aws-sdk/client-lambda",
        { cause },
      );
    },
  );
  return invokeCommand;
}

/** Lambda's exception for a name started with another payload. */
const ALREADY_STARTED = "DurableExecutionAlreadyStartedException";

/** Errors a repeated Invoke cannot cure: the request or the setup is wrong. */
const PERMANENT = new Set([
  "AccessDeniedException",
  "InvalidParameterValueException",
  "InvalidRequestContentException",
  "RequestTooLargeException",
  "ResourceNotFoundException",
  "ValidationException",
]);

/** How `startDurableExecution` retries an Invoke whose outcome it did not learn. */
export interface StartRetry {
  /** Invokes at most (the SDK's own retries come on top). Default 5. */
  tries?: number;
  /** First back-off, doubled per try. Default 50. */
  firstDelayMs?: number;
}

/**
 * Starts (or finds) the durable execution. Lambda answers a name it already has with the same payload with that
 * execution, so an Invoke whose answer was lost is sent again here, before the guard would release the claim: a
 * released claim lets an older event of the subject claim and start, while this start may have landed. Another
 * payload is `DurableExecutionConflictError`; an error a retry cannot cure, or the last try's, `DurableStartError`
 * (both with the SDK's error as `cause`). Stops early when `signal` aborts (the lease or the Lambda deadline).
 */
export async function startDurableExecution(
  client: LambdaInvoker,
  input: DurableInvokeInput,
  signal?: AbortSignal,
  retry: StartRetry = {},
): Promise<DurableInvokeOutput> {
  const InvokeCommand = await loadInvokeCommand();
  const tries = retry.tries ?? 5;
  let delayMs = retry.firstDelayMs ?? 50;
  for (let attempt = 1; ; attempt++) {
    try {
      const out = (await client.send(
        new InvokeCommand(input),
        signal ? { abortSignal: signal } : undefined,
      )) as DurableInvokeOutput | undefined;
      return out ?? {};
    } catch (error) {
      const name = (error as { name?: unknown } | null)?.name;
      if (name === ALREADY_STARTED) {
        throw new DurableExecutionConflictError(input.DurableExecutionName, { cause: error });
      }
      if (PERMANENT.has(String(name)) || attempt >= tries || signal?.aborted) {
        throw new DurableStartError(input.DurableExecutionName, { cause: error });
      }
      await sleep(delayMs, signal);
      delayMs *= 2;
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
