import { StoreError } from "../../core/errors.js";

/**
 * Server answers worth retrying: a server loading its data or busy with a script, a cluster moving or missing
 * slots, a replica that became read-only or a primary without its replicas (a failover in progress), memory over
 * `maxmemory` (it may free). Any other error reply is the server refusing this request for good (a wrong type, a
 * script error, an `EONCE` refusal of a sink write). An error without a reply (a dropped connection, a timeout,
 * ioredis giving up its retries) never reached an answer: whether it landed is unknown, so it is retryable, and the
 * retry recognises its own landed attempt.
 */
const RETRYABLE_REPLY =
  /\b(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|NOREPLICAS|OOM|MOVED|ASK)\b/;

/** An error reply from the server (ioredis's `ReplyError`), as opposed to a connection or client error. */
export function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === "ReplyError";
}

/**
 * Whether a Valkey or Redis error may pass on a retry: every error without a reply, and the transient replies
 * above.
 */
export function isRetryableValkeyError(error: unknown): boolean {
  if (!isReplyError(error)) return true;
  return RETRYABLE_REPLY.test(error.message);
}

/** The script is not in the server's cache (a restart, SCRIPT FLUSH, a failover): send it whole. */
export function isNoScript(error: unknown): boolean {
  return isReplyError(error) && error.message.startsWith("NOSCRIPT");
}

const connectionErrors = new WeakMap<object, Error>();

/** A client's connection failed (its `error` event): the next error without a reply names it. */
export function noteConnectionError(client: object, error: Error): void {
  connectionErrors.set(client, error);
}

/**
 * A script refused a write before writing anything (lua.ts `plan_writes`, its reply `EONCE …`): a target of another
 * type, an integer or a score the server would refuse, an increment that would overflow. Nothing of the step
 * changed; not retryable (the same write is refused again until the target changes).
 */
export class ValkeyWriteRefusedError extends StoreError {
  constructor(message: string, cause: unknown) {
    super(message, { cause, retryable: false });
  }
}

export function valkeyStoreError(op: string, what: string, error: unknown, client?: object): StoreError {
  if (error instanceof StoreError) return error;
  if (isReplyError(error) && error.message.startsWith("EONCE "))
    return new ValkeyWriteRefusedError(
      `Valkey ${op} of ${what} refused: ${error.message.slice(0, 500)}`,
      error,
    );
  let message = error instanceof Error ? error.message : String(error);
  // ioredis's own message ("Reached the max retries per request limit") does not say why it retried.
  const connection = client && !isReplyError(error) ? connectionErrors.get(client) : undefined;
  if (connection) message = `${message} (the connection: ${connection.message})`;
  return new StoreError(`Valkey ${op} of ${what} failed: ${message.slice(0, 500)}`, {
    cause: error,
    retryable: isRetryableValkeyError(error),
  });
}

/**
 * `waitForReplicas`: the step landed on the primary, but fewer replicas than asked acknowledged it within the
 * timeout, so a failover now could lose it. Retryable: the guard sends the step again, the retry recognises its
 * landed attempt, and its WAIT covers the first write too (WAIT counts every earlier write of the connection).
 */
export class ReplicasNotReachedError extends StoreError {
  readonly wanted: number;
  readonly acknowledged: number;
  readonly timeoutMs: number;

  constructor(op: string, what: string, o: { wanted: number; acknowledged: number; timeoutMs: number }) {
    super(
      `Valkey ${op} of ${what}: ${o.acknowledged} of the ${o.wanted} replicas asked for (waitForReplicas) acknowledged it within ${o.timeoutMs} ms; it landed on the primary, but a failover could lose it`,
      { retryable: true },
    );
    this.wanted = o.wanted;
    this.acknowledged = o.acknowledged;
    this.timeoutMs = o.timeoutMs;
  }
}
