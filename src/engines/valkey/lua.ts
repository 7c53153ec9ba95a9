import { LUA_WRITE_RULES } from "./write-rules.js";

/**
 * The server-side scripts: each guard step is one of them, run atomically by the server (EVALSHA, src/engines/valkey/
 * runner.ts). Every key is passed in KEYS (never built inside a script), so the cluster checks the slot of each.
 *
 * The claim condition is src/core/state.ts `claimAllowed`, clause for clause. Positions compare byte-wise with
 * `before`: Lua's `<` on strings uses the server's locale (strcoll), which need not be byte order. Fences and
 * times stay below 2^53, so Lua's numbers hold them exactly; stored numbers are the request's own strings, never
 * Lua's formatting of a number.
 *
 * The answer is `{landed, state, outcomes}`: `state` the hash as HGETALL gives it (field, value, …) when refused (a
 * claim also gives the state it replaced, without its result), `outcomes` 1 (applied) or 0 (stale) per sink write.
 *
 * A script that fails half-way keeps the writes it made (there is no rollback): every sink write is checked
 * (`plan_writes`: its type, operands and stamp, as the writes before it in the script leave them, by the server's
 * own rules, write-rules.ts) before anything is written, and the state is written last. `EONCE` errors are such
 * refusals: nothing changed.
 */

const PRELUDE = `
local function before(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function load(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil, flat end
  local s = {}
  for i = 1, #flat, 2 do s[flat[i]] = flat[i + 1] end
  return s, flat
end

local function without(flat, name)
  local out = {}
  for i = 1, #flat, 2 do
    if flat[i] ~= name then out[#out + 1] = flat[i]; out[#out + 1] = flat[i + 1] end
  end
  return out
end

-- claimAllowed: no live holder (lease + grace < now; with supersede an older position), newer than the committed
-- position, and a higher fence.
local function claimable(s, pos, fence, now, grace, supersede)
  if not s then return true end
  local gone = s.status ~= 'running' or tonumber(s.lease or '0') + grace < now
    or (supersede and before(s.pos, pos))
  local newer = s.cpos == nil or before(s.cpos, pos)
  return gone and newer and tonumber(s.fence) < fence
end

-- A refusal. With waitForReplicas (the BARRIER variant of each script) it rewrites the record's fence, unchanged:
-- a write that replicates, so that the WAIT after the script covers every earlier write of the server, other
-- connections' too (Redis 7.2 and Valkey count only the connection's own propagated writes): the state the refusal
-- was decided on (another caller's commit) is on the replicas before the guard acts on it.
local function refused(key, s, flat, outcomes)
  if BARRIER and s then redis.call('HSET', key, 'fence', s.fence) end
  if outcomes then return {0, flat, outcomes} end
  return {0, flat}
end

local function held(s, fence)
  return s ~= nil and s.status == 'running' and tonumber(s.fence) == fence
end

-- Expiry at the request's (seconds), never before the lease (TTL never ends a live claim) nor before floor ms
-- from the server's clock (minRetentionMs).
local function expire(key, exp, lease, floor)
  local at = tonumber(exp) * 1000
  if lease and tonumber(lease) > at then at = tonumber(lease) end
  if tonumber(floor) > 0 then
    local t = redis.call('TIME')
    local least = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(floor)
    if least > at then at = least end
  end
  redis.call('PEXPIREAT', key, string.format('%.0f', at))
end

-- A committed value: '' removes it, '+<value>' sets it.
local function keep(key, field, v)
  if v == '' then redis.call('HDEL', key, field) else redis.call('HSET', key, field, string.sub(v, 2)) end
end

-- The rest of a commit, after its HSET of the done state: the lease dropped, the result, its omitted bytes and
-- fingerprint kept, the expiry set.
local function committed(key, exp, result, omitted, cfp, floor)
  redis.call('HDEL', key, 'lease')
  keep(key, 'result', result)
  keep(key, 'omitted', omitted)
  keep(key, 'cfp', cfp)
  expire(key, exp, nil, floor)
end

local KIND = { set = 'string', incr = 'string', hset = 'hash', zadd = 'zset', rpush = 'list', sadd = 'set',
  fence = 'hash' }

-- The fenced rule (docs/decisions/0007): a write lands over an older stamp only (a lower position, or the same
-- position and a lower fence); a target without a stamp takes any. 'own': the same position and fence (this claim).
local function stamp_order(v, pos, fence)
  if not v then return 'older' end
  local i = string.find(v, ':', 1, true)
  local sp, sf = string.sub(v, i + 1), tonumber(string.sub(v, 1, i - 1))
  if sp == pos then
    if sf < tonumber(fence) then return 'older' end
    if sf == tonumber(fence) then return 'own' end
    return 'newer'
  end
  if before(sp, pos) then return 'older' end
  return 'newer'
end

-- A durable execution's fence (src/durable/step-keys.ts): a hash (pos, exec) that moves to (pos, exec) only when
-- it is absent, older by position, or already exec's (the same position: a retry, a later step).
local function fence_rule(fpos, fexec, pos, exec)
  return not fpos or before(fpos, pos) or (fpos == pos and fexec == exec)
end

-- Returns whether the fence at key may move, and what it holds.
local function fence_allows(key, pos, exec)
  local f = redis.call('HMGET', key, 'pos', 'exec')
  return fence_rule(f[1], f[2], pos, exec), f
end

${LUA_WRITE_RULES}
-- What the writes before a write leave: each key's type, a string's value (raw, or as an integer pair), a hash's
-- fields (stamps, fences). Read from the server the first time a key is asked for.
local function view()
  return { type = {}, raw = {}, int = {}, field = {} }
end

local function type_of(o, key)
  if o.type[key] == nil then o.type[key] = redis.call('TYPE', key).ok end
  return o.type[key]
end

local function field_of(o, key, name)
  o.field[key] = o.field[key] or {}
  local f = o.field[key]
  if f[name] == nil then f[name] = redis.call('HGET', key, name) or false end
  return f[name] or nil
end

local function show(v)
  local cut = string.gsub(string.sub(v, 1, 40), '[%c"\\\\]', '?')
  if #v > 40 then cut = cut .. '...' end
  return '"' .. cut .. '"'
end

-- INCRBY target by x, as the server will: both integers (redis_int) and the sum within int64, the increments of
-- one commit added up in order.
local function check_incr(o, target, t, x)
  local by = redis_int(x)
  if not by then return 'the increment ' .. show(x) .. ' of ' .. target .. ' is not an integer' end
  local cur = o.int[target]
  if not cur then
    local v = o.raw[target]
    if v == nil and t == 'string' then v = redis.call('GET', target) end
    if v == nil then cur = {0, 0} else cur = redis_int(v) end
    if not cur then return target .. ' holds ' .. show(v) .. ', not an integer' end
  end
  local sum = int_add(cur, by)
  if not sum then return 'incrementing ' .. target .. ' by ' .. x .. ' would overflow' end
  o.int[target] = sum
end

-- Whether the write may run: its operands and its target, as the writes before it leave them.
local function check_write(o, op, target, t, x)
  if op == 'incr' then return check_incr(o, target, t, x) end
  if op == 'zadd' and not redis_score(x) then
    return 'the score ' .. show(x) .. ' of ' .. target .. ' is not a number'
  end
  if op == 'set' then o.raw[target], o.int[target] = x, nil end
end

-- Every write checked, before any is written: nil and the reason, or the plan: per write 1 (apply), 0 (stale),
-- 2 (a put that finds its own stamp, an increment: applied already, not counted again). Sink writes: two keys
-- each from KEYS[k0] (stamp hash, target), six arguments each from ARGV[a0] (op, stamp field, position, fence, x,
-- y); an empty stamp field is an unfenced write. With own (put), a write over its own stamp answers applied.
-- reserved: the script's own keys, which no write may touch.
local function plan_writes(k0, a0, n, reserved, own)
  if #KEYS ~= k0 - 1 + 2 * n or #ARGV ~= a0 - 1 + 6 * n then return nil, 'malformed writes' end
  local o, plan = view(), {}
  for i = 0, n - 1 do
    local stamps, target, a = KEYS[k0 + 2 * i], KEYS[k0 + 2 * i + 1], a0 + 6 * i
    local op, field, pos, fence, x, y = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
    local kind = KIND[op]
    if not kind then return nil, 'unknown write operation ' .. show(op) end
    if reserved[target] or (field ~= '' and reserved[stamps]) then
      return nil, target .. ' is a key of the store'
    end
    local go, again = 1, false
    if op == 'fence' then
      local t = type_of(o, target)
      if t ~= 'none' and t ~= 'hash' then return nil, target .. ' holds a ' .. t .. ', not a hash' end
      if not fence_rule(field_of(o, target, 'pos'), field_of(o, target, 'exec'), x, y) then go = 0 end
    elseif field ~= '' then
      if not string.match(fence, '^[0-9]+$') then return nil, 'the fence ' .. show(fence) .. ' is not a number' end
      local st = type_of(o, stamps)
      if st ~= 'none' and st ~= 'hash' then return nil, 'the stamp key ' .. stamps .. ' holds a ' .. st end
      local v = field_of(o, stamps, field)
      if v and not string.match(v, '^[0-9]+:') then
        return nil, 'the stamp of ' .. target .. ' holds ' .. show(v) .. ', not <fence>:<position>'
      end
      local order = stamp_order(v, pos, fence)
      again = order == 'own' and own
      if order ~= 'older' and not again then go = 0 end
      if again and op == 'incr' then go = 2 end
    end
    if go == 1 then
      local t = type_of(o, target)
      if t ~= 'none' and t ~= kind then return nil, target .. ' holds a ' .. t .. ', not a ' .. kind end
      local bad = check_write(o, op, target, t, x)
      if bad then return nil, bad end
      o.type[target] = kind
      if op == 'fence' then o.field[target].pos, o.field[target].exec = x, y end
      if field ~= '' then o.field[stamps][field] = fence .. ':' .. pos; o.type[stamps] = 'hash' end
    end
    plan[i + 1] = go
  end
  return plan
end

-- Runs the plan: nothing here can fail (plan_writes checked it all). Answers 1 (applied) or 0 (stale) per write.
local function apply_writes(k0, a0, n, plan)
  local out = {}
  for i = 0, n - 1 do
    local stamps, target, a = KEYS[k0 + 2 * i], KEYS[k0 + 2 * i + 1], a0 + 6 * i
    local op, field, pos, fence, x, y = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
    if plan[i + 1] == 1 then
      -- The fence move (ValkeyStepEffects.fenceWrite, folded into the dispatcher's commit): x position, y execution.
      if op == 'fence' then redis.call('HSET', target, 'pos', x, 'exec', y)
      elseif op == 'set' then redis.call('SET', target, x)
      elseif op == 'hset' then redis.call('HSET', target, x, y)
      elseif op == 'incr' then redis.call('INCRBY', target, x)
      elseif op == 'zadd' then redis.call('ZADD', target, x, y)
      elseif op == 'rpush' then redis.call('RPUSH', target, x)
      elseif op == 'sadd' then redis.call('SADD', target, x) end
      if field ~= '' and op ~= 'fence' then redis.call('HSET', stamps, field, fence .. ':' .. pos) end
    end
    out[i + 1] = math.min(plan[i + 1], 1)
  end
  return out
end

local function writes_or_error(k0, a0, n, reserved, own)
  local plan, bad = plan_writes(k0, a0, n, reserved, own)
  if not plan then return nil, redis.error_reply('EONCE ' .. bad) end
  return apply_writes(k0, a0, n, plan)
end
`;

/** KEYS: state. ARGV: position, identity, fence, token, lease until (ms), expires at (s), now (ms), grace (ms), supersede (1/0), floor (ms). */
const CLAIM = `
local s, flat = load(KEYS[1])
local pos, id = ARGV[1], ARGV[2]
if not claimable(s, pos, tonumber(ARGV[3]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] == '1') then
  return refused(KEYS[1], s, flat)
end
local attempts = 1
if s and s.id == id then attempts = tonumber(s.att or '0') + 1 end
redis.call('HSET', KEYS[1], 'status', 'running', 'pos', pos, 'id', id, 'fence', ARGV[3], 'token', ARGV[4],
  'lease', ARGV[5], 'exp', ARGV[6], 'att', tostring(attempts))
expire(KEYS[1], ARGV[6], ARGV[5], ARGV[10])
return {1, without(flat, 'result')}
`;

/**
 * KEYS: state, then the writes' keys. ARGV: position, identity, fence, token, expires at (s), now (ms), grace (ms),
 * supersede (1/0), floor (ms), result, omitted bytes, fingerprint ('' or '+value'), write count, the writes.
 */
const CLAIM_AND_COMMIT = `
local s, flat = load(KEYS[1])
local pos, id = ARGV[1], ARGV[2]
if not claimable(s, pos, tonumber(ARGV[3]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8] == '1') then
  return refused(KEYS[1], s, flat, {})
end
local out, err = writes_or_error(2, 14, tonumber(ARGV[13]), { [KEYS[1]] = true })
if err then return err end
redis.call('HSET', KEYS[1], 'status', 'done', 'pos', pos, 'id', id, 'fence', ARGV[3], 'token', ARGV[4],
  'cpos', pos, 'cid', id, 'exp', ARGV[5], 'att', '0')
committed(KEYS[1], ARGV[5], ARGV[10], ARGV[11], ARGV[12], ARGV[9])
return {1, {}, out}
`;

/** KEYS: state, then the writes' keys. ARGV: fence, expires at (s), result, omitted bytes, fingerprint, floor (ms), write count, the writes. */
const COMMIT = `
local s, flat = load(KEYS[1])
if not held(s, tonumber(ARGV[1])) then return refused(KEYS[1], s, flat, {}) end
local out, err = writes_or_error(2, 8, tonumber(ARGV[7]), { [KEYS[1]] = true })
if err then return err end
redis.call('HSET', KEYS[1], 'status', 'done', 'cpos', s.pos, 'cid', s.id, 'exp', ARGV[2], 'att', '0')
committed(KEYS[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
return {1, {}, out}
`;

/** KEYS: state. ARGV: fence, lease until (ms), expires at (s), floor (ms). The expiry never moves back. */
const RENEW = `
local s, flat = load(KEYS[1])
if not held(s, tonumber(ARGV[1])) then return refused(KEYS[1], s, flat) end
local exp = ARGV[3]
if s.exp and tonumber(s.exp) > tonumber(exp) then exp = s.exp end
redis.call('HSET', KEYS[1], 'lease', ARGV[2], 'exp', exp)
expire(KEYS[1], exp, ARGV[2], ARGV[4])
return {1, {}}
`;

/** KEYS: state. ARGV: fence. The committed position and identity stay. */
const RELEASE = `
local s, flat = load(KEYS[1])
if not held(s, tonumber(ARGV[1])) then return refused(KEYS[1], s, flat) end
redis.call('HSET', KEYS[1], 'status', 'released')
redis.call('HDEL', KEYS[1], 'lease')
return {1, {}}
`;

/** KEYS: state. ARGV: the lease bound (src/core/state-admin.ts forgetLeaseBoundMs): a lease past it holds. */
const FORGET = `
local s, flat = load(KEYS[1])
if not s then return {0, flat} end
if s.status == 'running' and tonumber(s.lease or '0') > tonumber(ARGV[1]) then return {0, flat} end
redis.call('DEL', KEYS[1])
return {1, flat}
`;

/** KEYS: stamp hash, target. ARGV: one write. A sink write on its own: 1 applied, 0 stale. */
const PUT = `
local out, err = writes_or_error(1, 1, 1, {}, true)
if err then return err end
return out[1]
`;

/**
 * A guarded durable step (src/engines/valkey/step-effects.ts): the marker first (a step applied before is done,
 * whatever the fence says now), then the fence, then the writes (all checked before any is written), the fence
 * move, and the marker last, with its expiry. KEYS: marker, fence, then the writes' keys. ARGV: position,
 * execution, fence, result ('' or '+value'), now (ms), expires at (s), subject, step, write count, the writes.
 * Answers `{'marker', fence, result}`, `{'fence', pos, exec}` (refused: nothing written) or `{'landed', outcomes}`.
 */
const STEP = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local m = redis.call('HMGET', KEYS[1], 'fence', 'res')
  if BARRIER and m[1] then redis.call('HSET', KEYS[1], 'fence', m[1]) end
  return {'marker', m[1], m[2]}
end
local pos, exec = ARGV[1], ARGV[2]
local ok, f = fence_allows(KEYS[2], pos, exec)
if not ok then
  if BARRIER then redis.call('HSET', KEYS[2], 'pos', f[1]) end
  return {'fence', f[1], f[2]}
end
local out, err = writes_or_error(3, 10, tonumber(ARGV[9]), { [KEYS[1]] = true, [KEYS[2]] = true })
if err then return err end
redis.call('HSET', KEYS[2], 'pos', pos, 'exec', exec)
redis.call('HSET', KEYS[1], 'exec', exec, 'step', ARGV[8], 'subject', ARGV[7], 'pos', pos, 'fence', ARGV[3],
  'appliedAt', ARGV[5], 'expiresAt', ARGV[6])
keep(KEYS[1], 'res', ARGV[4])
redis.call('EXPIREAT', KEYS[1], ARGV[6])
return {'landed', out}
`;

/**
 * Stops a durable execution's guarded steps: its fence is marked stopped (exec `!stopped:<name>`) when it may move
 * there, or holds this execution or its stop already. KEYS: fence. ARGV: position, stopped mark, execution.
 * 1 stopped, 0 stale (a newer execution holds the fence).
 */
const STOP_STEP = `
local pos = ARGV[1]
local ok, f = fence_allows(KEYS[1], pos, ARGV[2])
if not ok and not (f[1] == pos and f[2] == ARGV[3]) then
  if BARRIER then redis.call('HSET', KEYS[1], 'pos', f[1]) end
  return 0
end
redis.call('HSET', KEYS[1], 'pos', pos, 'exec', ARGV[2])
return 1
`;

/**
 * The outbox (src/engines/valkey/outbox.ts). An entry is a member `<order>\n<message id>\n<entry JSON>` of the
 * tag's sorted set (score 0: lexicographic, so commit order); a lease is a field `<message id>` of the lease hash,
 * `<lease until ms> <owner>`. KEYS: the sorted set, the lease hash. ARGV: limit, owner, lease until (ms), now (ms).
 * Claims, for each subject, its first entry (its oldest), when no lease on it is live. Answers the claimed members
 * and how many entries the tag holds.
 */
const OUTBOX_CLAIM = `
local limit, now = tonumber(ARGV[1]), tonumber(ARGV[4])
local all = redis.call('ZRANGE', KEYS[1], 0, -1)
local seen, out = {}, {}
for _, m in ipairs(all) do
  if #out >= limit then break end
  local i = string.find(m, '\\n', 1, true)
  local j = string.find(m, '\\n', i + 1, true)
  local id = string.sub(m, i + 1, j - 1)
  local subject = cjson.decode(string.sub(m, j + 1)).subject
  if not seen[subject] then
    seen[subject] = true
    local lease = redis.call('HGET', KEYS[2], id)
    if not lease or tonumber(string.match(lease, '^[0-9]+')) <= now then
      redis.call('HSET', KEYS[2], id, ARGV[3] .. ' ' .. ARGV[2])
      out[#out + 1] = m
    end
  end
end
return {out, #all}
`;

/**
 * KEYS: the sorted set, the lease hash. ARGV: order, message id, owner, lease until (ms). Removes the entry when the
 * lease is the caller's (1); an entry no longer there was sent (entries leave only here: 1); else 0.
 */
const OUTBOX_MARK_SENT = `
local head = ARGV[1] .. '\\n' .. ARGV[2] .. '\\n'
local found = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. head, '(' .. ARGV[1] .. '\\n' .. ARGV[2] .. '\\11')
if #found == 0 then return 1 end
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[4] .. ' ' .. ARGV[3] then return 0 end
redis.call('ZREM', KEYS[1], found[1])
redis.call('HDEL', KEYS[2], ARGV[2])
return 1
`;

export type ScriptName =
  | "claim"
  | "claimAndCommit"
  | "commit"
  | "renew"
  | "release"
  | "forget"
  | "put"
  | "step"
  | "stopStep"
  | "outboxClaim"
  | "outboxMarkSent";

const BODIES: Readonly<Record<ScriptName, string>> = {
  claim: CLAIM,
  claimAndCommit: CLAIM_AND_COMMIT,
  commit: COMMIT,
  renew: RENEW,
  release: RELEASE,
  forget: FORGET,
  put: PUT,
  step: STEP,
  stopStep: STOP_STEP,
  outboxClaim: OUTBOX_CLAIM,
  outboxMarkSent: OUTBOX_MARK_SENT,
};

function scripts(barrier: boolean): Readonly<Record<ScriptName, string>> {
  const head = `local BARRIER = ${barrier}\n${PRELUDE}`;
  return Object.fromEntries(Object.entries(BODIES).map(([name, body]) => [name, head + body])) as Record<
    ScriptName,
    string
  >;
}

/** The scripts; with waitForReplicas, `LUA_BARRIER`: the same, whose refusals write (`refused`). */
export const LUA = scripts(false);
export const LUA_BARRIER = scripts(true);
