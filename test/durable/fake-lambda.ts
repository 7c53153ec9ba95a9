import {
  DURABLE_EXECUTION_NAME_PATTERN,
  type DurableInvokeInput,
  type LambdaInvoker,
} from "../../src/durable/index.js";

/** One execution the fake started, in start order. */
export interface StartedExecution {
  name: string;
  arn: string;
  payload: string;
}

/**
 * A Lambda client that keeps durable execution names as Lambda does: a new name starts an execution; the same name
 * with the same payload (byte for byte) returns the existing execution; another payload throws
 * `DurableExecutionAlreadyStartedException`; a name outside 1–64 of `[a-zA-Z0-9-_]` is a `ValidationException`.
 * `onStart` runs for each new execution (e.g. the durable handler under LocalDurableTestRunner).
 */
export class FakeDurableLambda implements LambdaInvoker {
  readonly started: StartedExecution[] = [];
  readonly conflicts: string[] = [];
  invokes = 0;
  readonly #byName = new Map<string, StartedExecution>();
  readonly #delayMs: () => number;

  constructor(options: { delayMs?: () => number; onStart?: (execution: StartedExecution) => void } = {}) {
    this.#delayMs = options.delayMs ?? (() => 0);
    this.onStart = options.onStart;
  }

  onStart: ((execution: StartedExecution) => void) | undefined;

  /** Starts `name` with `payload` as if an earlier dispatch (or another tool) had. */
  seed(name: string, payload: string): void {
    const e = {
      name,
      arn: `arn:aws:lambda:us-west-2:123456789012:function:durable:$LATEST/durable-execution/${name}/seeded`,
      payload,
    };
    this.#byName.set(name, e);
  }

  async send(command: {
    input: DurableInvokeInput;
  }): Promise<{ StatusCode: number; DurableExecutionArn: string }> {
    this.invokes++;
    const input = command.input;
    const delay = this.#delayMs();
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const name = input.DurableExecutionName;
    if (!DURABLE_EXECUTION_NAME_PATTERN.test(name)) throw named("ValidationException", `bad name ${name}`);
    if (input.InvocationType !== "Event") throw named("ValidationException", "expected an Event invoke");
    const payload = new TextDecoder().decode(input.Payload);
    const existing = this.#byName.get(name);
    if (existing) {
      if (existing.payload === payload) return { StatusCode: 202, DurableExecutionArn: existing.arn };
      this.conflicts.push(name);
      throw named("DurableExecutionAlreadyStartedException", `execution ${name} already started`);
    }
    const started = {
      name,
      arn: `arn:aws:lambda:us-west-2:123456789012:function:${input.FunctionName}/durable-execution/${name}/${this.started.length}`,
      payload,
    };
    this.#byName.set(name, started);
    this.started.push(started);
    this.onStart?.(started);
    return { StatusCode: 202, DurableExecutionArn: started.arn };
  }
}

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}
