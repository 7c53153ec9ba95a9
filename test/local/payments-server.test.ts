import { afterEach, describe, expect, it } from "vitest";
import { chargeWithKey, PaymentsApiError } from "../../examples/shared/payments.js";
import {
  type LocalPaymentsServer,
  type StartPaymentsServerOptions,
  startPaymentsServer,
} from "../../src/local/emulators/payments-server.js";

const servers: LocalPaymentsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function server(options: StartPaymentsServerOptions = {}): Promise<LocalPaymentsServer> {
  const s = await startPaymentsServer(options);
  servers.push(s);
  return s;
}

const order = { amountCents: 1250, currency: "eur", customerId: "cus_1", orderId: "o-1" };

/** A raw POST, to see status, headers and body as the API sends them. */
async function post(s: LocalPaymentsServer, body: unknown, key?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["Idempotency-Key"] = key;
  const res = await fetch(`${s.endpoint}/v1/charges`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: res.status,
    replayed: res.headers.get("idempotent-replayed"),
    body: (await res.json()) as { id?: string; error?: { type: string; message: string } },
  };
}

async function list(s: LocalPaymentsServer): Promise<{ id: string; orderId: string | null }[]> {
  const res = await fetch(`${s.endpoint}/v1/charges`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { id: string; orderId: string | null }[] }).data;
}

describe("local payments API", () => {
  it("listens on 127.0.0.1; without a key, every request is a new charge", async () => {
    const s = await server();
    expect(s.address).toBe("127.0.0.1");
    expect(s.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const a = await post(s, order);
    const b = await post(s, order);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(a.replayed).toBeNull();
    expect((await list(s)).map((c) => c.id)).toEqual([a.body.id, b.body.id]);
  });

  it("with a key: the same body replays the first response (same charge, Idempotent-Replayed: true)", async () => {
    const s = await server();
    const first = await post(s, order, "k-1");
    // The same parameters in another order and spacing are the same request.
    const again = await post(
      s,
      `{"orderId":"o-1",  "customerId":"cus_1","currency":"eur","amountCents":1250}`,
      "k-1",
    );
    expect(first).toMatchObject({ status: 201, replayed: null });
    expect(again).toMatchObject({ status: 201, replayed: "true", body: first.body });
    expect(await list(s)).toHaveLength(1);
    expect(s.requests.map((r) => r.outcome)).toEqual(["created", "replayed", "listed"]);
  });

  it("refuses a key reused with other parameters (422), and charges nothing", async () => {
    const s = await server();
    await post(s, order, "k-2");
    const other = await post(s, { ...order, amountCents: 999 }, "k-2");
    expect(other.status).toBe(422);
    expect(other.body.error?.type).toBe("idempotency_error");
    expect(other.body.error?.message).toMatch(/other parameters/);
    expect(await list(s)).toHaveLength(1);
  });

  it("answers 409 to a request whose key's first request is still being processed; later, the replay", async () => {
    const s = await server({ faults: { slowMs: 400 } });
    const [a, b] = await Promise.all([
      post(s, order, "k-3"),
      new Promise((r) => setTimeout(r, 50)).then(() => post(s, order, "k-3")),
    ]);
    expect(a.status).toBe(201);
    expect(b.status).toBe(409);
    expect(b.body.error?.type).toBe("idempotency_error");
    const later = await post(s, order, "k-3");
    expect(later).toMatchObject({ status: 201, replayed: "true", body: { id: a.body.id } });
    expect(await list(s)).toHaveLength(1);
  });

  it("forgets a key after keyRetentionMs: the same key then charges again", async () => {
    let nowMs = 1_000_000;
    const s = await server({ keyRetentionMs: 60_000, now: () => nowMs });
    const first = await post(s, order, "k-4");
    nowMs += 59_999;
    expect((await post(s, order, "k-4")).replayed).toBe("true");
    nowMs += 1;
    const after = await post(s, order, "k-4");
    expect(after).toMatchObject({ status: 201, replayed: null });
    expect(after.body.id).not.toBe(first.body.id);
    expect(await list(s)).toHaveLength(2);
  });

  it("forgets a key after a short real keyRetentionMs", async () => {
    const s = await server({ keyRetentionMs: 50 });
    await post(s, order, "k-5");
    await new Promise((r) => setTimeout(r, 80));
    expect((await post(s, order, "k-5")).replayed).toBeNull();
    expect(await list(s)).toHaveLength(2);
  });

  it("refuses bad requests with 400 and charges nothing", async () => {
    const s = await server();
    const bad = [
      await post(s, "not json"),
      await post(s, { ...order, amountCents: 0 }),
      await post(s, { ...order, currency: "euro" }),
      await post(s, { ...order, coupon: "x" }),
      await post(s, { amountCents: 1, currency: "eur" }),
      await post(s, order, "x".repeat(256)),
    ];
    for (const r of bad) {
      expect(r.status).toBe(400);
      expect(r.body.error?.type).toBe("invalid_request_error");
    }
    expect((await fetch(`${s.endpoint}/v1/refunds`, { method: "POST" })).status).toBe(404);
    expect(await list(s)).toHaveLength(0);
  });

  it("injected faults: a 500 before anything is done; a lost answer after the charge, which the key recovers", async () => {
    const s = await server({ faults: { failRate: 1 } });
    const failed = await post(s, order, "k-6");
    expect(failed.status).toBe(500);
    expect(failed.body.error?.type).toBe("api_error");
    expect(s.charges).toHaveLength(0);
    s.injectFaults({ lostResponseRate: 1 });
    await expect(post(s, order, "k-6")).rejects.toThrow(); // fetch sees the connection destroyed
    expect(s.charges).toHaveLength(1); // …but the charge was made
    s.injectFaults({});
    const retried = await post(s, order, "k-6");
    expect(retried).toMatchObject({ status: 201, replayed: "true", body: { id: s.charges[0]?.id } });
    expect(s.requests.map((r) => [r.outcome, r.lost])).toEqual([
      ["failed-before", false],
      ["created", true],
      ["replayed", false],
    ]);
    expect(() => s.injectFaults({ failRate: 0.6, lostResponseRate: 0.6 })).toThrow(RangeError);
  });

  it("draws its faults from the seed: one seed, one sequence of outcomes", async () => {
    const outcomes = async (seed: number) => {
      const s = await server({ seed, faults: { failRate: 0.4 } });
      for (let i = 0; i < 24; i++) await post(s, order);
      return s.requests.map((r) => r.outcome).join(",");
    };
    const a = await outcomes(3);
    expect(await outcomes(3)).toBe(a);
    expect(a).toMatch(/failed-before/);
    expect(a).toMatch(/created/);
    expect(await outcomes(4)).not.toBe(a);
  });

  it("chargeWithKey: the charge and whether it was replayed; a PaymentsApiError on refusal", async () => {
    const s = await server();
    const first = await chargeWithKey(s.endpoint, order, { idempotencyKey: "k-7" });
    const again = await chargeWithKey(s.endpoint, order, { idempotencyKey: "k-7" });
    expect(first).toMatchObject({ replayed: false, charge: { orderId: "o-1", idempotencyKey: "k-7" } });
    expect(again).toEqual({ replayed: true, charge: first.charge });
    const refused = await chargeWithKey(
      s.endpoint,
      { ...order, amountCents: 1 },
      { idempotencyKey: "k-7" },
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PaymentsApiError);
    expect(refused).toMatchObject({ status: 422, type: "idempotency_error", retryable: false });
    const unkeyed = await chargeWithKey(s.endpoint, order);
    expect(unkeyed.charge.id).not.toBe(first.charge.id);
  });
});
