/**
 * The roll-up's counting script and how events are encoded for it. One script per batch: its
 * figures are summed in the script and added once per field (one HINCRBY per day, channel and
 * figure of the batch, not per record). A transcript writer's batch is deduplicated by its
 * outbox entries (`marks`: an entry counted once is skipped when a retried or taken-over batch
 * brings it again; the marks leave Redis once the entries left the outbox); no set of every
 * message id is kept. Events counted outside a writer's batch (hand-offs) are deduplicated by
 * their id in the day's `seen` set, and so is every event while a rebuild runs (its `rebuilding`
 * flag): a record is then counted once, by whichever of a live writer and the rebuild sees it
 * first. The day sets a figure needs are conversations (customer messages, a person, not
 * resolved), each by a short digest of its id: their memory grows with conversations, not messages.
 * Distinct conversations over any range come from a HyperLogLog per day and channel (those with a
 * customer message, those with a person): one PFADD per key and batch; a HyperLogLog keeps
 * registers (at most 12 KiB), never an identifier, and PFCOUNT over a range's day keys merges them.
 */
import { createHash } from 'node:crypto';
import { luaScript } from '../redis.js';

/**
 * KEYS[1] totals (hash `day|channel|metric` → n), KEYS[2] hand-offs waiting for a teammate's
 * first reply (hash conversation → `at|day|channel|hand-off|team[|ended at]`), KEYS[3] teammates'
 * messages written while one waited, until the channel takes them (hash message → `at|conversation`),
 * KEYS[4] the rebuild's flag, KEYS[5] the widget sites counted (a set of site keys), KEYS[6] the roles counted, then the day keys and mark sets the events name by index. ARGV[1]
 * the events (JSON), ARGV[2] the response buckets, ARGV[3] the day keys' TTL (s), ARGV[4] the
 * marks (JSON: [[set index, mark], …]), ARGV[5] the distinct conversations' HyperLogLogs' TTL (s). Returns the first replies it counted
 * (`day|channel|teammate|team|start|reply`), for their wait within the team's hours and per team and teammate.
 */
export const countScript = luaScript(`
local totals, waiting, replies = KEYS[1], KEYS[2], KEYS[3]
local rebuilding = redis.call('EXISTS', KEYS[4]) == 1
local events = cjson.decode(ARGV[1])
local bounds = cjson.decode(ARGV[2])
local marks = cjson.decode(ARGV[4])
local touched = {}
local counted = {}
local sums, order = {}, {}
local fresh = {}
local anyReply = redis.call('HLEN', replies) > 0
local function key(i) touched[i] = true return KEYS[i] end
-- Distinct conversations: each HyperLogLog's members of the batch, added with one PFADD per key.
local logs, logOrder = {}, {}
local function distinct(i, conv)
  if not i then return end
  if logs[i] == nil then
    logs[i] = {}
    logOrder[#logOrder + 1] = i
  end
  table.insert(logs[i], conv)
end
local function sum(field, n)
  if sums[field] == nil then
    sums[field] = 0
    order[#order + 1] = field
  end
  sums[field] = sums[field] + n
end
-- For the event being counted: a channel's figure prefix (day|channel|) → its site's (day|channel~site|).
-- A conversation is one site's: the site's figures are its channel's for its conversations, day sets and all.
local echo = {}
local function inc(field, n)
  if n == 0 then return end
  sum(field, n)
  local prefix, metric = string.match(field, '^([^|]*|[^|]*|)(.*)$')
  local site = prefix and echo[prefix]
  if site then sum(site .. metric, n) end
end
-- The batch's outbox entries: those counted before (a retried batch) count nothing again.
local bySet = {}
for m, pair in ipairs(marks) do
  local set = pair[1]
  bySet[set] = bySet[set] or { ids = {}, at = {} }
  table.insert(bySet[set].ids, pair[2])
  table.insert(bySet[set].at, m)
end
-- In chunks of 1000 (Lua's unpack is bounded; a batch has one mark per outbox entry).
for set, group in pairs(bySet) do
  for from = 1, #group.ids, 1000 do
    local to = math.min(from + 999, #group.ids)
    local known = redis.call('SMISMEMBER', KEYS[set], unpack(group.ids, from, to))
    local new = {}
    for j = from, to do
      if known[j - from + 1] == 0 then
        fresh[group.at[j]] = true
        new[#new + 1] = group.ids[j]
      end
    end
    if #new > 0 then redis.call('SADD', key(set), unpack(new)) end
  end
end
-- Whether a day set has members: asked once a batch (most batches find the next day's set, and
-- many a day's set of conversations with a person, empty: no SISMEMBER on them then).
local filled = {}
local function has(i, conv)
  if filled[i] == nil then filled[i] = redis.call('SCARD', KEYS[i]) > 0 end
  return filled[i] and redis.call('SISMEMBER', KEYS[i], conv) == 1
end
local function added(i, conv)
  local new = redis.call('SADD', key(i), conv) == 1
  filled[i] = true
  return new
end
local function unresolved(u, f, conv) if added(u, conv) then inc(f .. 'unres', 1) end end
local function person(e, v)
  if added(v.p, e.v) and has(v.a, e.v) then unresolved(v.u, v.f, e.v) end
end
local function split(text)
  local parts = {}
  for part in string.gmatch(text .. '|', '([^|]*)|') do parts[#parts + 1] = part end
  return parts
end
-- A teammate's (who) message to conv written at t reached the customer: the first one ends the wait.
local function replied(conv, t, who)
  local held = redis.call('HGET', waiting, conv)
  if not held then return end
  local w = split(held)
  local ended = tonumber(w[6] or '')
  if ended and t > ended then
    redis.call('HDEL', waiting, conv)
    return
  end
  local seconds = (t - tonumber(w[1])) / 1000
  if seconds < 0 then return end
  -- The wait's views: its channel, then each of its site's and role's (channel~site~@role).
  local views = {}
  local channel = nil
  for part in string.gmatch(w[3], '[^~]+') do
    if channel == nil then
      channel = part
      views[#views + 1] = w[2] .. '|' .. part .. '|'
    else
      views[#views + 1] = w[2] .. '|' .. channel .. '~' .. part .. '|'
    end
  end
  local bucket = #bounds
  for b = 1, #bounds do
    if seconds <= bounds[b] then
      bucket = b - 1
      break
    end
  end
  for _, view in ipairs(views) do
    inc(view .. 'frt:' .. bucket, 1)
    inc(view .. 'frt_n', 1)
  end
  redis.call('HDEL', waiting, conv)
  -- The caller counts the wait within the team's hours: hand-off day|channel|, team, start, reply.
  counted[#counted + 1] = w[2] .. '|' .. w[3] .. '|' .. (who or '') .. '|' .. (w[5] or '') .. '|' .. w[1] .. '|' .. t
end
-- Conversations this batch already found in a day's set (a conversation's messages of one batch).
local active = {}
-- A conversation active in the channel's view (a customer's message): its day's sets.
local function conversation(e, v)
  local f = v.f
  -- v.a absent: the writer knows the conversation is in the day's set already.
  local seen = v.a and (v.a .. '|' .. e.v)
  if seen and not active[seen] then
    active[seen] = true
    distinct(v.hc, e.v)
    distinct(v.hcs, e.v)
    if added(v.a, e.v) then
      inc(f .. 'conv', 1)
      if has(v.p, e.v) or has(v.an, e.v) then unresolved(v.u, f, e.v) end
      if has(v.ap, e.v) then unresolved(v.up, v.fp, e.v) end
    end
  end
end
local function customer(e, v)
  inc(v.f .. 'in', 1)
  conversation(e, v)
end
-- What an event adds to one view's figures.
local function figures(e, v)
  local f = v.f
  if e.k == 'in' then
    customer(e, v)
  elseif e.k == 'out' then
    inc(f .. 'out', 1)
    -- A reply's guidance entries: quoted in its prompt, found applying by the judge.
    for _, entry in ipairs(e.gq or {}) do inc(f .. 'gd_q:' .. entry, 1) end
    for _, entry in ipairs(e.ga or {}) do inc(f .. 'gd_a:' .. entry, 1) end
    if e.tm then
      person(e, v)
      distinct(v.hp, e.v)
      distinct(v.hps, e.v)
    end
  elseif e.k == 'handoff' then
    inc(f .. 'ho', 1)
    inc(f .. 'ho_team:' .. e.team, 1)
    inc(f .. 'ho_role:' .. e.role, 1)
    -- A role's view keeps no day sets: only what the role did.
    if v.p then person(e, v) end
    distinct(v.hp, e.v)
    distinct(v.hps, e.v)
  elseif e.k == 'action' then
    inc(f .. 'act_' .. e.o, 1)
  elseif e.k == 'miss' then
    inc(f .. 'miss', e.n)
  elseif e.k == 'resolved' then
    inc(f .. 'res:' .. e.rb, 1)
  elseif e.k == 'usage' then
    inc(f .. 'calls', e.n)
    inc(f .. 'tok_in:' .. e.m, e.ti)
    inc(f .. 'tok_out:' .. e.m, e.to)
  end
end
local sites, roles = {}, {}
for _, e in ipairs(events) do
  local ok = (e.b == nil) or fresh[e.b] == true
  if ok and e.i ~= '' and e.s and (rebuilding or e.b == nil) then ok = redis.call('SADD', key(e.s), e.i) == 1 end
  if ok then
    -- The channel's view (the event itself, echoed to its site's), then its role's (e.x).
    echo = {}
    if e.sf then
      echo[e.f] = e.sf
      if e.fp then echo[e.fp] = e.sfp end
    end
    figures(e, e)
    echo = {}
    for _, v in ipairs(e.x or {}) do figures(e, v) end
    if e.st then sites[e.st] = true end
    if e.rl then roles[e.rl] = true end
    if e.k == 'out' and e.tm and redis.call('HEXISTS', waiting, e.v) == 1 then
      redis.call('HSET', replies, e.m, e.t .. '|' .. e.v .. '|' .. (e.w or ''))
      anyReply = true
    elseif e.k == 'delivered' and anyReply then
      local held = redis.call('HGET', replies, e.m)
      if held then
        redis.call('HDEL', replies, e.m)
        local r = split(held)
        replied(r[2], tonumber(r[1]), r[3])
      end
    elseif e.k == 'handoff' then
      -- The newest hand-off's wait (its view: its site's when it has one): an earlier one still waiting was ended or never answered.
      redis.call('HSET', waiting, e.v, e.t .. '|' .. e.wf .. e.h .. '|' .. e.team)
    elseif e.k == 'handoff_end' then
      local held = redis.call('HGET', waiting, e.v)
      if held then
        local w = split(held)
        if w[4] == e.h and not w[6] then redis.call('HSET', waiting, e.v, held .. '|' .. e.t) end
      end
    end
  end
end
for set, names in pairs({ [5] = sites, [6] = roles }) do
  local list = {}
  for name in pairs(names) do list[#list + 1] = name end
  if #list > 0 then redis.call('SADD', KEYS[set], unpack(list)) end
end
for _, field in ipairs(order) do redis.call('HINCRBY', totals, field, sums[field]) end
for i in pairs(touched) do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
for _, i in ipairs(logOrder) do
  local members = logs[i]
  for from = 1, #members, 1000 do redis.call('PFADD', KEYS[i], unpack(members, from, math.min(from + 999, #members))) end
  redis.call('EXPIRE', KEYS[i], ARGV[5])
end
return counted`);

/** The day key sets of the distinct conversations' HyperLogLogs: with a customer message, with a person (a hand-off or a teammate's message). */
export const DISTINCT_CONVERSATIONS = 'hll-conv';
export const DISTINCT_WITH_PERSON = 'hll-person';

/**
 * A conversation as the day sets and waits hold it: 72 bits of its id's SHA-1 (12 characters,
 * the smallest allocation Redis makes for a string), whatever the id's length. Anyone holding the
 * number can compute it, so an erasure anonymises these too (`src/people/erasures.ts`).
 */
export const conversationTag = (conversation: string) => createHash('sha1').update(conversation).digest('base64url').slice(0, 12);
