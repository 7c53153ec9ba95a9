import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { positionFromNumber } from "../../src/core/position.js";
import { type ClaimRequest, classifyRefusal } from "../../src/core/state.js";
import type { ClaimResult } from "../../src/stores/contract.js";
import { STORES, type StoreUnderTest } from "./harness.js";

const LEASE_MS = 10_000;
const p = (n: number) => positionFromNumber(n);

function request(key: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  const nowMs = overrides.nowMs ?? Date.now();
  return {
    key,
    position: p(1),
    identity: `${overrides.position ?? p(1)}:created`,
    nowMs,
    leaseUntilMs: nowMs + LEASE_MS,
    expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
    supersede: false,
    ...overrides,
  };
}

function at(pos: number, overrides: Partial<ClaimRequest> = {}): Partial<ClaimRequest> {
  return { position: p(pos), identity: `${p(pos)}:created`, ...overrides };
}

function claimed(r: ClaimResult): { fence: number; attempt: number } {
  if (!r.claimed) throw new Error(`expected a claim, got refusal on ${JSON.stringify(r.state)}`);
  return r;
}

function refusal(r: ClaimResult, req: ClaimRequest) {
  if (r.claimed) throw new Error("expected a refusal, got a claim");
  return classifyRefusal(r.state, req)?.kind;
}

describe.each(STORES)("store contract: $name", (factory) => {
  let t: StoreUnderTest;
  beforeAll(async () => {
    t = await factory.make();
  });
  afterAll(async () => t?.close());
  const key = () => `o#bucket/${randomUUID()}`;

  it("claims a new subject with fence 1, attempt 1, and commits it", async () => {
    const k = key();
    const c = claimed(await t.store.claim(request(k)));
    expect(c).toMatchObject({ fence: 1, attempt: 1 });
    const before = await t.store.read(k);
    expect(before).toMatchObject({ status: "running", position: p(1), fence: 1 });
    expect(before?.leaseUntilMs).toBeGreaterThan(Date.now());
    const commit = await t.store.commit({
      key: k,
      fence: 1,
      identity: `${p(1)}:created`,
      result: '{"n":1}',
      expiresAtSeconds: 99,
    });
    expect(commit.committed).toBe(true);
    const after = await t.store.read(k);
    expect(after).toMatchObject({
      status: "done",
      committedPosition: p(1),
      result: '{"n":1}',
      expiresAtSeconds: 99,
    });
    expect(after?.leaseUntilMs).toBeUndefined();
  });

  it("refuses a committed event as duplicate, with its stored result, and an older one as stale", async () => {
    const k = key();
    claimed(await t.store.claim(request(k, at(5))));
    await t.store.commit({
      key: k,
      fence: 1,
      identity: `${p(5)}:created`,
      result: '"r5"',
      expiresAtSeconds: 99,
    });
    const dupReq = request(k, at(5));
    const dup = await t.store.claim(dupReq);
    expect(refusal(dup, dupReq)).toBe("duplicate");
    expect(!dup.claimed && dup.state.result).toBe('"r5"');
    const oldReq = request(k, at(3));
    expect(refusal(await t.store.claim(oldReq), oldReq)).toBe("stale");
    // A newer one is claimable and increments the fence.
    expect(claimed(await t.store.claim(request(k, at(7))))).toMatchObject({ fence: 2, attempt: 1 });
  });

  it("refuses while an older event holds a live lease (busy) and a newer one runs (stale)", async () => {
    const k = key();
    claimed(await t.store.claim(request(k, at(3))));
    const newer = request(k, at(5));
    expect(refusal(await t.store.claim(newer), newer)).toBe("busy");
    const same = request(k, at(3));
    expect(refusal(await t.store.claim(same), same)).toBe("in-flight");
    const k2 = key();
    claimed(await t.store.claim(request(k2, at(9))));
    const older = request(k2, at(4));
    expect(refusal(await t.store.claim(older), older)).toBe("stale");
  });

  it("supersede takes the claim from a live older holder, whose commit is then refused", async () => {
    const k = key();
    claimed(await t.store.claim(request(k, at(3))));
    const r = await t.store.claim(request(k, at(5, { supersede: true })));
    const c = claimed(r);
    expect(c.fence).toBe(2);
    expect(r.claimed && r.previous).toMatchObject({ status: "running", position: p(3) });
    const zombie = await t.store.commit({
      key: k,
      fence: 1,
      identity: `${p(3)}:created`,
      expiresAtSeconds: 99,
    });
    expect(zombie.committed).toBe(false);
    expect(!zombie.committed && zombie.state?.position).toBe(p(5));
    // Supersede never takes a claim for an older position.
    const older = request(k, at(4, { supersede: true }));
    expect(refusal(await t.store.claim(older), older)).toBe("stale");
  });

  it("lets a crashed holder's event be claimed again after the lease, with attempt 2 and fence 2", async () => {
    const k = key();
    const now = Date.now();
    claimed(await t.store.claim(request(k, { nowMs: now, leaseUntilMs: now + 50 })));
    const early = request(k, { nowMs: now + 10 });
    expect(refusal(await t.store.claim(early), early)).toBe("in-flight");
    const late = await t.store.claim(request(k, { nowMs: now + 51 }));
    expect(claimed(late)).toMatchObject({ fence: 2, attempt: 2 });
    expect(late.claimed && late.previous?.status).toBe("running");
  });

  it("refuses a zombie's renew, release and commit once another run took over", async () => {
    const k = key();
    const now = Date.now();
    claimed(await t.store.claim(request(k, { nowMs: now, leaseUntilMs: now + 10 })));
    claimed(await t.store.claim(request(k, { nowMs: now + 20 })));
    expect(await t.store.renew({ key: k, fence: 1, leaseUntilMs: now + 99_999 })).toBe(false);
    expect(await t.store.release({ key: k, fence: 1 })).toBe(false);
    expect(
      (await t.store.commit({ key: k, fence: 1, identity: `${p(1)}:created`, expiresAtSeconds: 9 }))
        .committed,
    ).toBe(false);
    expect(await t.store.renew({ key: k, fence: 2, leaseUntilMs: now + 99_999 })).toBe(true);
    expect((await t.store.read(k))?.leaseUntilMs).toBe(now + 99_999);
    expect(
      (await t.store.commit({ key: k, fence: 2, identity: `${p(1)}:created`, expiresAtSeconds: 9 }))
        .committed,
    ).toBe(true);
  });

  it("release lets the redelivery claim again and keeps the last committed event", async () => {
    const k = key();
    claimed(await t.store.claim(request(k, at(3))));
    await t.store.commit({ key: k, fence: 1, identity: `${p(3)}:created`, expiresAtSeconds: 99 });
    claimed(await t.store.claim(request(k, at(5))));
    expect(await t.store.release({ key: k, fence: 2 })).toBe(true);
    expect(await t.store.release({ key: k, fence: 2 })).toBe(false);
    const state = await t.store.read(k);
    expect(state).toMatchObject({ status: "released", committedPosition: p(3) });
    const again = await t.store.claim(request(k, at(5)));
    expect(claimed(again)).toMatchObject({ fence: 3, attempt: 2 });
    const dupReq = request(k, at(3));
    expect(refusal(await t.store.claim(dupReq), dupReq)).toBe("duplicate");
  });

  it("renew keeps others out past the original lease", async () => {
    const k = key();
    const now = Date.now();
    claimed(await t.store.claim(request(k, { nowMs: now, leaseUntilMs: now + 100 })));
    expect(await t.store.renew({ key: k, fence: 1, leaseUntilMs: now + 10_000 })).toBe(true);
    const later = request(k, { nowMs: now + 5000 });
    expect(refusal(await t.store.claim(later), later)).toBe("in-flight");
  });

  it("an unordered (empty position) event is never claimable again once committed", async () => {
    const k = `u#${randomUUID()}`;
    const req = request(k, { position: "", identity: "msg-1" });
    claimed(await t.store.claim(req));
    await t.store.commit({ key: k, fence: 1, identity: "msg-1", expiresAtSeconds: 99 });
    expect(refusal(await t.store.claim(req), req)).toBe("duplicate");
  });

  it("16 concurrent claims of one event: exactly one is claimed, the rest are in flight", async () => {
    const k = key();
    const req = request(k, at(1));
    const results = await Promise.all(Array.from({ length: 16 }, () => t.store.claim(req)));
    expect(results.filter((r) => r.claimed)).toHaveLength(1);
    expect(results.filter((r) => !r.claimed).map((r) => refusal(r, req))).toEqual(
      Array(15).fill("in-flight"),
    );
  });

  it("folds an atomic write into the commit; a zombie's write is not applied; a newer row wins", async () => {
    const k = key();
    const now = Date.now();
    const target = `row-${randomUUID()}`;
    claimed(await t.store.claim(request(k, { ...at(4), nowMs: now, leaseUntilMs: now + 10 })));
    claimed(await t.store.claim(request(k, { ...at(4), nowMs: now + 20 })));
    const zombie = await t.store.commit({
      key: k,
      fence: 1,
      identity: `${p(4)}:created`,
      expiresAtSeconds: 9,
      writes: [t.sink.atomic({ position: p(4), fence: 1 }, target, "zombie")],
    });
    expect(zombie.committed).toBe(false);
    expect(await t.sink.read(target)).toBeUndefined();
    const ok = await t.store.commit({
      key: k,
      fence: 2,
      identity: `${p(4)}:created`,
      expiresAtSeconds: 9,
      writes: [t.sink.atomic({ position: p(4), fence: 2 }, target, "v4")],
    });
    expect(ok).toEqual({ committed: true, writes: [{ description: expect.any(String), status: "applied" }] });
    expect(await t.sink.read(target)).toMatchObject({ value: "v4", srcPos: p(4), srcFence: 2 });
    // Another subject's claim writing an older position to the same row: the commit goes ahead, the write is stale.
    const k2 = key();
    claimed(await t.store.claim(request(k2, at(2))));
    const older = await t.store.commit({
      key: k2,
      fence: 1,
      identity: `${p(2)}:created`,
      expiresAtSeconds: 9,
      writes: [t.sink.atomic({ position: p(2), fence: 1 }, target, "v2")],
    });
    expect(older).toEqual({
      committed: true,
      writes: [{ description: expect.any(String), status: "stale" }],
    });
    expect((await t.sink.read(target))?.value).toBe("v4");
    expect((await t.store.read(k2))?.status).toBe("done");
  });

  it("claimAndCommit: one request that claims, applies writes and commits; refusals as for claim", async () => {
    const k = key();
    const target = `row-${randomUUID()}`;
    const first = await t.store.claimAndCommit({
      ...request(k, at(5)),
      result: '"five"',
      writes: [t.sink.atomic({ position: p(5), fence: 0 }, target, "v5")],
    });
    expect(first).toEqual({
      claimed: true,
      writes: [{ description: expect.any(String), status: "applied" }],
    });
    expect(await t.store.read(k)).toMatchObject({
      status: "done",
      committedPosition: p(5),
      result: '"five"',
      fence: 1,
    });
    expect(await t.sink.read(target)).toMatchObject({ value: "v5", srcPos: p(5) });
    const dupReq = request(k, at(5));
    const dup = await t.store.claimAndCommit({
      ...dupReq,
      writes: [t.sink.atomic({ position: p(5), fence: 0 }, target, "again")],
    });
    expect(refusal(dup as ClaimResult, dupReq)).toBe("duplicate");
    const oldReq = request(k, at(2));
    expect(refusal((await t.store.claimAndCommit(oldReq)) as ClaimResult, oldReq)).toBe("stale");
    expect((await t.sink.read(target))?.value).toBe("v5");
  });

  it("claimAndCommit waits for a live holder (busy) and, with supersede, fences it out", async () => {
    const k = key();
    claimed(await t.store.claim(request(k, at(3))));
    const busyReq = request(k, at(6));
    expect(refusal((await t.store.claimAndCommit(busyReq)) as ClaimResult, busyReq)).toBe("busy");
    const taken = await t.store.claimAndCommit(request(k, at(6, { supersede: true })));
    expect(taken.claimed).toBe(true);
    expect(await t.store.read(k)).toMatchObject({ status: "done", committedPosition: p(6), fence: 2 });
    const holder = await t.store.commit({
      key: k,
      fence: 1,
      identity: `${p(3)}:created`,
      expiresAtSeconds: 9,
    });
    expect(holder.committed).toBe(false);
  });
});
