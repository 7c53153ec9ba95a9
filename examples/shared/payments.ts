/**
 * A payments client as a handler would write it: one charge per call over `fetch`, with the event's idempotency key
 * (`ctx.effectKey("charge")`) so that a retried, taken-over or redelivered event charges once (docs/effects.md).
 * Speaks the local payments API (src/local/emulators/payments-server.ts, `PAYMENTS_API_URL` under the local runtime),
 * which answers as the big payment APIs do.
 */

/** What to charge. Keep it a function of the event: a key reused with another body is refused (422). */
export interface ChargeInput {
  amountCents: number;
  currency: string;
  customerId: string;
  orderId?: string;
}

/** The charge the API made (or made before, for a replayed key). */
export interface ChargeAnswer {
  id: string;
  amountCents: number;
  currency: string;
  customerId: string;
  orderId: string | null;
  idempotencyKey: string | null;
  createdAtMs: number;
}

/** The API refused the charge: `status` and its error `type` (`idempotency_error` for 409 and 422). */
export class PaymentsApiError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(status: number, type: string, message: string) {
    super(`payments API ${status} ${type}: ${message}`);
    this.name = "PaymentsApiError";
    this.status = status;
    this.type = type;
  }

  /** Whether sending the same request again may succeed: the key's first request in progress (409), or a 5xx. */
  get retryable(): boolean {
    return this.status === 409 || this.status >= 500;
  }
}

/**
 * Charges `input` at `baseUrl` (`PAYMENTS_API_URL`), with `idempotencyKey` when given: the charge and whether it was a
 * replay of the key's first request. A `PaymentsApiError` when the API refuses; a lost answer rejects as `fetch`
 * does (a `TypeError`): the charge may have been made, and only a key makes sending it again safe.
 */
export async function chargeWithKey(
  baseUrl: string,
  input: ChargeInput,
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<{ charge: ChargeAnswer; replayed: boolean }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;
  const response = await fetch(new URL("/v1/charges", baseUrl), {
    method: "POST",
    headers,
    body: JSON.stringify(input),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const body = (await response.json()) as ChargeAnswer | { error: { type: string; message: string } };
  if (!response.ok || "error" in body) {
    const error = "error" in body ? body.error : { type: "unknown", message: response.statusText };
    throw new PaymentsApiError(response.status, error.type, error.message);
  }
  return { charge: body, replayed: response.headers.get("idempotent-replayed") === "true" };
}
