import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { EffectTarget, ForeignKind, ForeignTargets } from "../../sim/backend.js";
import { valkeyHashTag } from "./keys.js";
import { LUA, LUA_BARRIER } from "./lua.js";
import { valkeyWrite } from "./sink.js";
import type { ValkeyStore } from "./store.js";

/**
 * Values someone else wrote in a counter before the history (src/sim/foreign-values.ts), and the increments each
 * commit folds to it. `refused`: the server refuses the INCRBY (the scripts must refuse the whole commit first).
 */
const KINDS: readonly (ForeignKind & { plant: string | { list: string }; by: readonly string[] })[] = [
  { name: 'a counter written as "007"', refused: true, plant: "007", by: ["1"] },
  { name: 'a counter written as "-0"', refused: true, plant: "-0", by: ["1"] },
  { name: 'a counter written as "+5"', refused: true, plant: "+5", by: ["1"] },
  { name: "a counter past int64", refused: true, plant: "9223372036854775808", by: ["1"] },
  {
    name: "a counter that two increments overflow",
    refused: true,
    plant: "9223372036854775806",
    by: ["1", "1"],
  },
  { name: "a list where the counter is", refused: true, plant: { list: "x" }, by: ["1"] },
  { name: "a counter at -42", refused: false, plant: "-42", by: ["1"] },
  {
    name: "a counter two increments take to int64's end",
    refused: false,
    plant: "9223372036854775805",
    by: ["1", "1"],
  },
];

const kindOf = (name: string) => KINDS.find((k) => k.name === name) as (typeof KINDS)[number];

/** The Valkey backend's foreign targets: a counter per event, `<prefix>foreign{<state key>}:<counter id>`. */
export function valkeyForeignTargets(client: Redis, prefix: string, store: ValkeyStore): ForeignTargets {
  const keyOf = (e: EffectTarget) => `${prefix}foreign${valkeyHashTag(e.key)}:${e.counterId}`;
  return {
    kinds: KINDS.map(({ name, refused }) => ({ name, refused })),
    async plant(e, name) {
      const { plant } = kindOf(name);
      if (typeof plant === "string") await client.set(keyOf(e), plant);
      else await client.rpush(keyOf(e), plant.list);
    },
    writes: (e, name) => kindOf(name).by.map((x) => valkeyWrite(store, "incr", keyOf(e), x)),
    async check(e, name, commits) {
      const { plant, by, refused } = kindOf(name);
      if (typeof plant !== "string") {
        const list = await client.lrange(keyOf(e), 0, -1);
        return list.length === 1 && list[0] === plant.list
          ? undefined
          : `the list holds ${JSON.stringify(list)}`;
      }
      const step = by.reduce((n, x) => n + BigInt(x), 0n);
      const expected = refused ? plant : String(BigInt(plant) + step * BigInt(commits));
      const held = await client.get(keyOf(e));
      return held === expected
        ? undefined
        : `the counter holds ${held}, ${commits} commits make it ${expected}`;
    },
  };
}

/**
 * `--break pattern-write-check`: the client runs every script with its integer check as it was before the server's
 * rules (write-rules.ts): a stored value is an integer when it matches a pattern and has at most 18 digits; no
 * operand and no overflow is checked. Swapped at the client, so the store's own code runs unchanged.
 */
export function withPatternWriteCheck(client: Redis): Redis {
  const sha = (lua: string) => createHash("sha1").update(lua).digest("hex");
  const bySha = new Map<string, string>();
  const byLua = new Map<string, string>();
  for (const lua of [...Object.values(LUA), ...Object.values(LUA_BARRIER)]) {
    const broken = lua.replace(
      /local function check_incr\(o, target, t, x\)\n[\s\S]*?\nend\n/,
      () => PATTERN_CHECK,
    );
    if (broken === lua && lua.includes("check_incr")) throw new Error("check_incr not found in the scripts");
    bySha.set(sha(lua), sha(broken));
    byLua.set(lua, broken);
  }
  type Send = (...args: unknown[]) => Promise<unknown>;
  return new Proxy(client, {
    get(target, prop) {
      if (prop === "evalsha")
        return (s: string, ...rest: unknown[]) =>
          (target.evalsha as Send).call(target, bySha.get(s) ?? s, ...rest);
      if (prop === "eval")
        return (lua: string, ...rest: unknown[]) =>
          (target.eval as Send).call(target, byLua.get(lua) ?? lua, ...rest);
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

const PATTERN_CHECK = `local function check_incr(o, target, t, x)
  if t == 'string' then
    local v = redis.call('GET', target)
    if #v > 18 or not string.match(v, '^%-?%d+$') then
      return target .. ' does not hold an integer of at most 18 digits'
    end
  end
end
`;
