/**
 * A local payments API: a small `node:http` server on 127.0.0.1 that charges customers with idempotency keys as the
 * big payment APIs do, to show what `ctx.effectKey` makes once (docs/effects.md). One resource:
 *
 * - `POST /v1/charges`, a JSON body `{ amountCents, currency, customerId, orderId? }`, an optional `Idempotency-Key`
 *   header. Without a key, each request is a new charge (201). With a key, the first request creates the charge and
 *   keeps (key → the body's fingerprint, status, response) for `keyRetentionMs`; the same key with the same body
 *   replays that response (the same charge, header `Idempotent-Replayed: true`); with another body, 422
 *   `idempotency_error`; while the key's first request is still being processed, 409 `idempotency_error` (retry
 *   later). After `keyRetentionMs` the key is forgotten: a request with it charges again.
 * - `GET /v1/charges`: every charge, in creation order (`{ data: [...] }`), to count them afterwards.
 *
 * Errors have the shape `{ error: { type, message } }` (`invalid_request_error`, `idempotency_error`, `api_error`).
 * Seeded faults, one draw per request: a 500 before anything is done (`failRate`), or the charge made (or replayed)
 * and then the connection destroyed without an answer (`lostResponseRate`); `slowMs` is how long each new charge
 * takes (the window in which a second request with its key gets 409).
 */

import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createPrng, type Prng } from "../../sim/prng.js";
import { header, readBody, startHttpServer } from "./http-server.js";
import type { LocalServer } from "./local-server.js";

/** What a charge request asks for. */
export interface ChargeRequest {
  /** The amount in the currency's smallest unit: a positive integer. */
  amountCents: number;
  /** An ISO 4217 code of three letters (`eur`, `usd`). */
  currency: string;
  customerId: string;
  orderId?: string;
}

/** A charge the server made. */
export interface Charge {
  /** `ch_` and the charge's number (`ch_000001`). */
  id: string;
  amountCents: number;
  currency: string;
  customerId: string;
  orderId: string | null;
  /** The key of the request that made it, null without one. */
  idempotencyKey: string | null;
  createdAtMs: number;
}

/** How one request ended. */
export type PaymentsOutcome =
  /** A new charge was made. */
  | "created"
  /** A key seen before with the same body: its stored response. */
  | "replayed"
  /** A key seen before with another body: 422. */
  | "key-reused"
  /** A key whose first request is still being processed: 409. */
  | "key-in-progress"
  /** The request's own fault (body, key, method, path): a 4xx. */
  | "rejected"
  /** An injected failure before anything was done: 500. */
  | "failed-before"
  /** `GET /v1/charges`. */
  | "listed";

/** One request to the server, in arrival order. */
export interface PaymentsRequestRecord {
  atMs: number;
  method: string;
  path: string;
  idempotencyKey: string | null;
  outcome: PaymentsOutcome;
  /** The charge made or replayed. */
  chargeId?: string;
  /** The answer was dropped after the charge was made or replayed (an injected fault). */
  lost: boolean;
}

/** Seeded faults of the server. */
export interface PaymentsFaults {
  /** Share of requests failing before anything is done (500 `api_error`). */
  failRate?: number;
  /** Share of requests whose answer is lost after the charge was made or replayed (the connection is destroyed). */
  lostResponseRate?: number;
  /** How long each new charge takes, in ms. Default 0. */
  slowMs?: number;
}

export interface StartPaymentsServerOptions {
  /** Default: a port the OS picks. */
  port?: number;
  /** Seed of the fault decisions (the runtime's seed). Default 1. */
  seed?: number;
  faults?: PaymentsFaults;
  /** How long a key is kept after its charge, in ms. Default 24 h, as the big payment APIs keep theirs. */
  keyRetentionMs?: number;
  /** The server's clock (epoch ms); default `Date.now`. */
  now?: () => number;
}

/** The local payments API: its charges, the requests it was sent, and its faults. */
export interface LocalPaymentsServer extends LocalServer {
  /** Every charge made, in creation order. */
  readonly charges: readonly Charge[];
  /** Every request, in arrival order. */
  readonly requests: readonly PaymentsRequestRecord[];
  /** Sets the faults from now on. */
  injectFaults(faults: PaymentsFaults): void;
}

/** Header of an idempotent request, as the big payment APIs name it. */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Header of a replayed response. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";
const DEFAULT_KEY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** The longest key taken, in characters (Stripe's limit). */
const MAX_KEY_LENGTH = 255;
const CHARGE_FIELDS = new Set(["amountCents", "currency", "customerId", "orderId"]);

/** An answer the server refuses a request with. */
class PaymentsError extends Error {
  constructor(
    readonly status: number,
    readonly type: "invalid_request_error" | "idempotency_error" | "api_error",
    readonly outcome: PaymentsOutcome,
    message: string,
  ) {
    super(message);
  }
}

/** Starts the server on 127.0.0.1. */
export async function startPaymentsServer(
  options: StartPaymentsServerOptions = {},
): Promise<LocalPaymentsServer> {
  const state = new PaymentsState(options);
  const server = await startHttpServer(
    options.port ?? 0,
    (req, res) => state.handle(req, res),
    (res, error) => answer(res, 500, { error: { type: "api_error", message: String(error) } }),
  );
  return {
    ...server,
    charges: state.charges,
    requests: state.requests,
    injectFaults: (faults) => state.setFaults(faults),
  };
}

/** What a key keeps: the fingerprint of the body it was first used with, and the response once there is one. */
interface KeyEntry {
  fingerprint: string;
  /** Absent while the first request is being processed. */
  response?: { status: number; body: string; chargeId: string };
  storedAtMs: number;
}

/** The charges, the keys, the records and the fault stream. */
class PaymentsState {
  readonly charges: Charge[] = [];
  readonly requests: PaymentsRequestRecord[] = [];
  readonly #keys = new Map<string, KeyEntry>();
  readonly #prng: Prng;
  readonly #retentionMs: number;
  readonly #now: () => number;
  #faults: Required<PaymentsFaults> = { failRate: 0, lostResponseRate: 0, slowMs: 0 };

  constructor(options: StartPaymentsServerOptions) {
    this.#prng = createPrng(options.seed ?? 1).fork("payments");
    const retention = options.keyRetentionMs ?? DEFAULT_KEY_RETENTION_MS;
    if (!Number.isFinite(retention) || retention <= 0) {
      throw new RangeError(`keyRetentionMs is a positive number of ms, got ${retention}`);
    }
    this.#retentionMs = retention;
    this.#now = options.now ?? Date.now;
    this.setFaults(options.faults ?? {});
  }

  setFaults(faults: PaymentsFaults): void {
    const failRate = faults.failRate ?? 0;
    const lostResponseRate = faults.lostResponseRate ?? 0;
    const slowMs = faults.slowMs ?? 0;
    const share = (v: number) => Number.isFinite(v) && v >= 0 && v <= 1;
    if (!share(failRate) || !share(lostResponseRate) || failRate + lostResponseRate > 1) {
      throw new RangeError("payments fault rates are shares in [0, 1] whose sum is at most 1");
    }
    if (!Number.isFinite(slowMs) || slowMs < 0) {
      throw new RangeError(`slowMs is a non-negative number of ms, got ${slowMs}`);
    }
    this.#faults = { failRate, lostResponseRate, slowMs };
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    const method = req.method ?? "GET";
    const key = header(req, IDEMPOTENCY_KEY_HEADER.toLowerCase()) ?? null;
    const record = (outcome: PaymentsOutcome, extra: Partial<PaymentsRequestRecord> = {}) =>
      this.requests.push({
        atMs: this.#now(),
        method,
        path,
        idempotencyKey: key,
        outcome,
        lost: false,
        ...extra,
      });
    // One draw per request, whatever it asks: the fault stream does not depend on what came before.
    const u = this.#prng.next();
    try {
      if (path !== "/v1/charges" || (method !== "POST" && method !== "GET")) {
        throw new PaymentsError(
          404,
          "invalid_request_error",
          "rejected",
          `the local payments API serves POST and GET /v1/charges, not ${method} ${path}`,
        );
      }
      if (u < this.#faults.failRate) {
        throw new PaymentsError(500, "api_error", "failed-before", "injected failure (nothing was done)");
      }
      if (method === "GET") {
        record("listed");
        return answer(res, 200, { data: this.charges });
      }
      if (key !== null && (key.length === 0 || key.length > MAX_KEY_LENGTH)) {
        throw new PaymentsError(
          400,
          "invalid_request_error",
          "rejected",
          `an ${IDEMPOTENCY_KEY_HEADER} has 1 to ${MAX_KEY_LENGTH} characters`,
        );
      }
      const done = await this.#charge(parseCharge(body), key);
      const lost = u < this.#faults.failRate + this.#faults.lostResponseRate;
      record(done.outcome, { chargeId: done.chargeId, lost });
      if (lost) {
        res.destroy(); // the charge stands; the caller sees a reset connection
        return;
      }
      const headers: Record<string, string> =
        done.outcome === "replayed" ? { [IDEMPOTENT_REPLAYED_HEADER]: "true" } : {};
      answerRaw(res, done.status, done.body, headers);
    } catch (error) {
      if (!(error instanceof PaymentsError)) throw error;
      record(error.outcome);
      answer(res, error.status, { error: { type: error.type, message: error.message } });
    }
  }

  /** A new charge, or the key's stored response; throws the key's refusals. */
  async #charge(
    request: ChargeRequest,
    key: string | null,
  ): Promise<{ outcome: "created" | "replayed"; status: number; body: string; chargeId: string }> {
    if (key === null) return { outcome: "created", ...(await this.#create(request, null)) };
    const fingerprint = fingerprintOf(request);
    const entry = this.#entry(key);
    if (entry) {
      if (entry.fingerprint !== fingerprint) {
        throw new PaymentsError(
          422,
          "idempotency_error",
          "key-reused",
          `Keys for idempotent requests can only be used with the same parameters they were first used with: ${key} was used with other parameters`,
        );
      }
      if (!entry.response) {
        throw new PaymentsError(
          409,
          "idempotency_error",
          "key-in-progress",
          `There is another request with the key ${key} in progress: try again later`,
        );
      }
      return { outcome: "replayed", ...entry.response };
    }
    const pending: KeyEntry = { fingerprint, storedAtMs: this.#now() };
    this.#keys.set(key, pending);
    try {
      pending.response = await this.#create(request, key);
    } catch (error) {
      this.#keys.delete(key); // nothing was charged: the key is free again
      throw error;
    }
    pending.storedAtMs = this.#now();
    return { outcome: "created", ...pending.response };
  }

  /** The key's entry while it is kept; a key past its retention is forgotten. */
  #entry(key: string): KeyEntry | undefined {
    const entry = this.#keys.get(key);
    if (entry?.response && this.#now() - entry.storedAtMs >= this.#retentionMs) {
      this.#keys.delete(key);
      return undefined;
    }
    return entry;
  }

  async #create(
    request: ChargeRequest,
    key: string | null,
  ): Promise<{ status: number; body: string; chargeId: string }> {
    if (this.#faults.slowMs > 0) await new Promise((r) => setTimeout(r, this.#faults.slowMs));
    const charge: Charge = {
      id: `ch_${String(this.charges.length + 1).padStart(6, "0")}`,
      amountCents: request.amountCents,
      currency: request.currency,
      customerId: request.customerId,
      orderId: request.orderId ?? null,
      idempotencyKey: key,
      createdAtMs: this.#now(),
    };
    this.charges.push(charge);
    return { status: 201, body: JSON.stringify(charge), chargeId: charge.id };
  }
}

/** The request's body as a charge request, or a 400 naming what is wrong. */
function parseCharge(body: Buffer): ChargeRequest {
  const bad = (message: string) => new PaymentsError(400, "invalid_request_error", "rejected", message);
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    throw bad("the body is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw bad("the body is not an object");
  const v = value as Record<string, unknown>;
  const unknown = Object.keys(v).filter((k) => !CHARGE_FIELDS.has(k));
  if (unknown.length > 0) throw bad(`unknown parameter ${unknown.join(", ")}`);
  if (!Number.isSafeInteger(v.amountCents) || (v.amountCents as number) <= 0) {
    throw bad("amountCents is a positive integer");
  }
  if (typeof v.currency !== "string" || !/^[A-Za-z]{3}$/.test(v.currency)) {
    throw bad("currency is a three-letter ISO 4217 code");
  }
  if (typeof v.customerId !== "string" || v.customerId.length === 0) throw bad("customerId is required");
  if (v.orderId !== undefined && typeof v.orderId !== "string") throw bad("orderId is a string");
  return {
    amountCents: v.amountCents as number,
    currency: v.currency,
    customerId: v.customerId,
    ...(v.orderId !== undefined ? { orderId: v.orderId as string } : {}),
  };
}

/** The request's parameters, whatever order or spacing its JSON had. */
function fingerprintOf(r: ChargeRequest): string {
  const canonical = JSON.stringify([r.amountCents, r.currency, r.customerId, r.orderId ?? null]);
  return createHash("sha256").update(canonical, "utf8").digest("base64url");
}

function answer(res: ServerResponse, status: number, value: unknown): void {
  answerRaw(res, status, JSON.stringify(value), {});
}

function answerRaw(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  res
    .writeHead(status, {
      "Content-Type": "application/json",
      "Content-Length": String(Buffer.byteLength(body)),
      ...headers,
    })
    .end(body);
}
