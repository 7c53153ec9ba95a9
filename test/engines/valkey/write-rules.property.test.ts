import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addInt64,
  isRedisScore,
  LUA_WRITE_RULES,
  redisInteger,
} from "../../../src/engines/valkey/write-rules.js";
import { deleteKeys, testClient, testPrefix } from "./harness.js";

/**
 * The write rules are written twice (write-rules.ts: TypeScript for the builders, Lua for the scripts); both must be
 * the server's own. On generated strings, each is compared with what this machine's Redis does: INCRBY on a stored
 * value and with an operand, INCRBY's overflow, ZADD's score.
 */
describe("valkey write rules: TypeScript, Lua and the server agree", () => {
  let client: Redis;
  let prefix: string;
  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  const lua = (body: string, ...args: string[]) => client.eval(`${LUA_WRITE_RULES}\n${body}`, 0, ...args);
  const ok = (p: Promise<unknown>) =>
    p.then(
      () => true,
      () => false,
    );

  const INT_EDGES = [
    "0",
    "-0",
    "00",
    "007",
    "+1",
    " 1",
    "1 ",
    "",
    "-",
    "1.0",
    "1e3",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999",
    "-99999999999999999999",
    "1\u0000",
    "١",
  ];
  const integerLike = fc.oneof(
    fc.string({ unit: fc.constantFrom(..."0123456789-+ .e"), maxLength: 22 }),
    fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
    fc.bigInt({ min: -(2n ** 63n) - 3n, max: -(2n ** 63n) + 3n }).map(String),
    fc.bigInt({ min: 2n ** 63n - 3n, max: 2n ** 63n + 3n }).map(String),
  );

  async function checkInteger(s: string) {
    const stored = `${prefix}n`;
    await client.set(stored, s);
    const server = await ok(client.incrby(stored, 0));
    const operand = await ok(client.incrby(`${prefix}fresh`, s));
    await client.del(`${prefix}fresh`);
    const inLua = (await lua("return redis_int(ARGV[1]) and 1 or 0", s)) === 1;
    expect({ s, ts: redisInteger(s) !== undefined, lua: inLua, operand }).toEqual({
      s,
      ts: server,
      lua: server,
      operand: server,
    });
  }

  it("an integer: as a stored value and as an increment", async () => {
    for (const s of INT_EDGES) await checkInteger(s);
    await fc.assert(fc.asyncProperty(integerLike, checkInteger), { numRuns: 400 });
  });

  const nearBound = fc.oneof(
    fc.bigInt({ min: 2n ** 63n - 2n ** 20n, max: 2n ** 63n - 1n }),
    fc.bigInt({ min: -(2n ** 63n), max: -(2n ** 63n) + 2n ** 20n }),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }),
  );

  it("a sum: INCRBY's overflow, and the value it leaves", async () => {
    await fc.assert(
      fc.asyncProperty(nearBound, nearBound, async (a, b) => {
        const key = `${prefix}sum`;
        await client.set(key, String(a));
        // The value read back as a string: ioredis answers INCRBY with a JavaScript number.
        const server = (await ok(client.incrby(key, String(b))))
          ? BigInt((await client.get(key)) ?? "")
          : undefined;
        const reply = (await lua(
          "local s = int_add(redis_int(ARGV[1]), redis_int(ARGV[2])) if not s then return false end return {tostring(s[1]), tostring(s[2])}",
          String(a),
          String(b),
        )) as [string, string] | null;
        const inLua = reply === null ? undefined : BigInt(reply[0]) * 10n ** 9n + BigInt(reply[1]);
        expect({ ts: addInt64(a, b), lua: inLua }).toEqual({ ts: server, lua: server });
      }),
      { numRuns: 300 },
    );
  });

  const SCORE_EDGES = [
    "inf",
    "-inf",
    "+inf",
    "Infinity",
    "-INFINITY",
    "infinit",
    "nan",
    "-nan",
    "NaN",
    "0x1p3",
    "0X1.8P-2",
    "0x",
    "0x.p1",
    "0x1p",
    "0x.8",
    "0x1.",
    "1e",
    "1e+",
    ".",
    ".5",
    "5.",
    "+.5e-3",
    " 1",
    "1 ",
    "",
    "1e400",
    "-1e400",
    "1e-400",
    "0e-400",
    "1e-310",
    "4.9e-324",
    "2e-324",
    "2.4703282292062328e-324",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "0x1.fffffffffffffp1023",
    "0x1.fffffffffffff8p1023",
    "0x1p-1074",
    "0x1p-1075",
    "0x1.0000000000001p-1075",
    "0x3p-1076",
    "1\u0000",
    "1_0",
  ];
  const scoreLike = fc.oneof(
    fc.string({ unit: fc.constantFrom(..."0123456789+-.eExXpPaAfFinINty "), maxLength: 12 }),
    fc.double().map(String),
    fc
      .tuple(fc.integer({ min: -99, max: 99 }), fc.integer({ min: -1200, max: 1200 }))
      .map(([m, e]) => `${m}e${e}`),
    fc
      .tuple(fc.bigInt({ min: 0n, max: 2n ** 60n }), fc.integer({ min: -1200, max: 1100 }))
      .map(([m, e]) => `0x${m.toString(16)}p${e}`),
  );

  async function checkScore(s: string) {
    const server = await ok(client.zadd(`${prefix}z`, s, "m"));
    const inLua = (await lua("return redis_score(ARGV[1]) and 1 or 0", s)) === 1;
    expect({ s, ts: isRedisScore(s), lua: inLua }).toEqual({ s, ts: server, lua: server });
  }

  it("a sorted-set score", async () => {
    for (const s of SCORE_EDGES) await checkScore(s);
    await fc.assert(fc.asyncProperty(scoreLike, checkScore), { numRuns: 600 });
  });
});
