import { OptionsError } from "../../core/errors.js";

/**
 * What the server takes as an operand of a sink write, written twice side by side: in TypeScript, to refuse a bad
 * write when it is built, and in Lua (`LUA_WRITE_RULES`, part of every script, lua.ts), to check every write before
 * the first is written (a script has no rollback). The Lua cannot import the TypeScript, so
 * `test/engines/valkey/write-rules.property.test.ts` runs both on generated strings against the server itself.
 *
 * - An integer (INCRBY's increment, and the string it increments) is Redis's `string2ll`: `0`, or an optional `-`,
 *   a digit 1-9 and more digits, within int64 (no `+`, no leading zeros, no `-0`, no spaces).
 * - A sorted-set score is Redis's `string2d`: all of the string is a C `strtod` number (decimal or hexadecimal,
 *   `inf` and `infinity` in any case, an optional sign), with no leading space, neither NaN, nor a finite number
 *   that overflows to infinity or underflows to zero.
 */

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The integer Redis reads from `s` (INCRBY's rule), or undefined when it refuses it. */
export function redisInteger(s: string): bigint | undefined {
  if (s.length > 20 || !/^(?:0|-?[1-9][0-9]*)$/.test(s)) return undefined;
  const v = BigInt(s);
  return v >= INT64_MIN && v <= INT64_MAX ? v : undefined;
}

/** `a + b` as INCRBY computes it, or undefined when it would overflow int64 (the server refuses it). */
export function addInt64(a: bigint, b: bigint): bigint | undefined {
  const sum = a + b;
  return sum >= INT64_MIN && sum <= INT64_MAX ? sum : undefined;
}

const DECIMAL = /^([0-9]*\.?[0-9]*)(?:[eE]([+-]?[0-9]+))?$/;
const HEXADECIMAL = /^0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)(?:[pP]([+-]?[0-9]+))?$/;

/** Whether Redis takes `s` as a sorted-set score (ZADD's rule). */
export function isRedisScore(s: string): boolean {
  const body = s.replace(/^[+-]/, "");
  const lower = body.toLowerCase();
  if (lower === "inf" || lower === "infinity") return true;
  const hex = HEXADECIMAL.exec(body);
  if (hex) {
    const [, whole = "", fraction = "", exponent = "0"] = hex;
    return (
      whole.length + fraction.length > 0 && hexInRange(whole + fraction, fraction.length, BigInt(exponent))
    );
  }
  const dec = DECIMAL.exec(body);
  if (!dec || !/[0-9]/.test(dec[1] ?? "")) return false;
  const value = Number(body);
  // strtod's ERANGE, which Redis refuses: a finite number that overflows, or a nonzero one that underflows to 0.
  return Number.isFinite(value) && (value !== 0 || !/[1-9]/.test(dec[1] ?? ""));
}

/** Whether the hexadecimal float `0x<digits>p<exponent>` (with `fractionDigits` after the point) rounds to a finite nonzero double, or is zero. */
function hexInRange(digits: string, fractionDigits: number, exponent: bigint): boolean {
  const m = BigInt(`0x${digits}`);
  if (m === 0n) return true;
  const bits = m.toString(2).length;
  const k = exponent - 4n * BigInt(fractionDigits); // value = m * 2^k
  const top = BigInt(bits) - 1n + k; // value in [2^top, 2^(top+1))
  if (top > 1023n) return false;
  // Rounded to nearest even: at 2^1024 - 2^970 and above it is infinity; at 2^-1075 and below, zero.
  if (top === 1023n) {
    // value = m * 2^(1024 - bits): finite iff m * 2^(54 - bits) < 2^54 - 1.
    const limit = 2n ** 54n - 1n;
    return bits <= 54 ? m << BigInt(54 - bits) < limit : m < limit << BigInt(bits - 54);
  }
  if (top < -1075n) return false;
  if (top === -1075n) return (m & (m - 1n)) !== 0n; // exactly 2^-1075 is a tie, to even: zero
  return true;
}

/** The write operations of lua.ts (`KIND`): anything else is refused before it reaches a script. */
export const VALKEY_WRITE_OPS = ["set", "hset", "incr", "zadd", "rpush", "sadd", "fence"] as const;

/**
 * Refuses a write the server would refuse whatever its target holds: an unknown operation, an increment that is not
 * an integer, a score that is not a number. `who` names the caller in the error.
 */
export function assertWriteOperands(who: string, op: unknown, x: unknown): void {
  if (!(VALKEY_WRITE_OPS as readonly unknown[]).includes(op))
    throw new OptionsError(`${who}: unknown write operation ${JSON.stringify(op)}`);
  if (typeof x !== "string") throw new OptionsError(`${who}: the operand must be a string`);
  if (op === "incr" && redisInteger(x) === undefined)
    throw new OptionsError(
      `${who}: the increment ${JSON.stringify(x)} is not an integer Redis takes (0, or no leading zeros, no "+", within int64)`,
    );
  if (op === "zadd" && !isRedisScore(x))
    throw new OptionsError(`${who}: the score ${JSON.stringify(x)} is not a number Redis takes`);
}

/**
 * The same rules in Lua, for the scripts (lua.ts). Integers are pairs `{hi, lo}`, the value `hi * 1e9 + lo` with
 * `0 <= lo < 1e9`: Lua's numbers are doubles, exact only below 2^53. `tonumber` is C's strtod, as the server's.
 */
export const LUA_WRITE_RULES = `
local INT_HI, INT_LO = 9223372036, 854775807

local function redis_int(s)
  if s == '0' then return {0, 0} end
  local neg, digits = string.match(s, '^(%-?)([1-9][0-9]*)$')
  if not digits or #digits > 19 then return nil end
  local lo = tonumber(string.sub(digits, -9))
  local hi = 0
  if #digits > 9 then hi = tonumber(string.sub(digits, 1, -10)) end
  local lo_max = INT_LO
  if neg == '-' then lo_max = INT_LO + 1 end
  if hi > INT_HI or (hi == INT_HI and lo > lo_max) then return nil end
  if neg == '-' then
    if lo == 0 then return {-hi, 0} end
    return {-hi - 1, 1e9 - lo}
  end
  return {hi, lo}
end

local function int_add(a, b)
  local hi, lo = a[1] + b[1], a[2] + b[2]
  if lo >= 1e9 then hi, lo = hi + 1, lo - 1e9 end
  if hi > INT_HI or (hi == INT_HI and lo > INT_LO) then return nil end
  if hi < -INT_HI - 1 or (hi == -INT_HI - 1 and lo < 1e9 - INT_LO - 1) then return nil end
  return {hi, lo}
end

local function redis_score(s)
  if string.find(s, '%z') then return false end
  local body = string.lower(string.match(s, '^[+-]?(.*)$'))
  if body == 'inf' or body == 'infinity' then return true end
  local mantissa, rest, digit, nonzero = nil, nil, '[0-9]', '[1-9]'
  local hex = string.match(body, '^0x(.*)$')
  if hex then
    mantissa, rest = string.match(hex, '^([0-9a-f]*%.?[0-9a-f]*)(.*)$')
    if rest ~= '' and not string.match(rest, '^p[+-]?[0-9]+$') then return false end
    digit, nonzero = '[0-9a-f]', '[1-9a-f]'
  else
    mantissa, rest = string.match(body, '^([0-9]*%.?[0-9]*)(.*)$')
    if rest ~= '' and not string.match(rest, '^e[+-]?[0-9]+$') then return false end
  end
  if not string.find(mantissa, digit) then return false end
  local v = tonumber(s)
  if v == nil or v ~= v or v == math.huge or v == -math.huge then return false end
  return v ~= 0 or not string.find(mantissa, nonzero)
end
`;
