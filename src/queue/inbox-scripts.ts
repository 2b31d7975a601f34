/**
 * The conversation inbox's Lua scripts (`conversation-inbox.ts`, `inbox-turn-state.ts`): each
 * touches one conversation's keys only (its `{conversationKey}` hash tag), every key passed in
 * KEYS. Scripts never decode message text: a batch is acknowledged by comparing the exact stored
 * entries (placing a takeover's end reads only which entries are a teammate's).
 */
import { luaScript } from '../redis.js';

// KEYS: dedupe, inbox, lock, queued. ARGV: payload, dedupe ttl (s), inbox ttl (s), queued ttl (ms),
// notice channel ('' for none), conversation key. Returns 0 a duplicate, 1 appended (the caller
// adds a job: marked queued), 2 appended while the conversation's lock is held (its holder is told
// on the notice channel, with the inbox's new length), 3 appended while a job added for it has not
// yet tried the lock. The inbox's TTL is set only by the message that creates it (see INBOX_TTL_SECONDS).
export const acceptScript = luaScript(`
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  local length = redis.call('RPUSH', KEYS[2], ARGV[1])
  if length == 1 then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
  if redis.call('EXISTS', KEYS[3]) == 1 then
    if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], 'grew|' .. length .. '|' .. ARGV[6]) end
    return 2
  end
  if redis.call('SET', KEYS[4], '1', 'NX', 'PX', ARGV[4]) then return 1 end
  return 3
end
return 0`);

// KEYS: dedupe, inbox, lock, queued, retry. ARGV: payload, dedupe ttl (s), inbox ttl (s), queued
// ttl (ms), most messages in a batch. A takeover's end (its customer is told the assistant is back)
// goes right after the last teammate entry waiting, ahead of the customer messages behind it (the
// assistant answers those once the customer was told), but never into the head's batch that may be
// in a turn: frozen (its size in the retry state), failed, or read by the lock's holder (up to a
// full batch). Decodes an entry only to see whether it is a teammate's. Returns as acceptScript.
export const takeoverEndScript = luaScript(`
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then return 0 end
local entries = redis.call('LRANGE', KEYS[2], 0, -1)
local function decoded(raw)
  local ok, value = pcall(cjson.decode, raw)
  if ok and type(value) == 'table' then return value end
  return nil
end
local function teammate(raw)
  local value = decoded(raw)
  return value ~= nil and type(value.teammate) == 'table'
end
local keep = 0
local head = entries[1] and decoded(entries[1])
if head and redis.call('HGET', KEYS[5], 'messageId') == head.messageId then
  keep = tonumber(redis.call('HGET', KEYS[5], 'size') or '1')
end
if #entries > 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  local read = 1
  if not teammate(entries[1]) then
    while read < math.min(#entries, tonumber(ARGV[5])) and not teammate(entries[read + 1]) do read = read + 1 end
  end
  keep = math.max(keep, read)
end
local at = math.min(keep, #entries)
for index = #entries, at + 1, -1 do
  if teammate(entries[index]) then
    at = index
    break
  end
end
if at == 0 then redis.call('DEL', KEYS[2]) else redis.call('LTRIM', KEYS[2], 0, at - 1) end
redis.call('RPUSH', KEYS[2], ARGV[1])
for index = at + 1, #entries do redis.call('RPUSH', KEYS[2], entries[index]) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
if redis.call('SET', KEYS[4], '1', 'NX', 'PX', ARGV[4]) then return 1 end
return 3`);

// KEYS: inbox, retry, lock, typing, outage. ARGV: lock token ('' keeps it), 1 when the batch has turn
// state (2: clear it and end the conversation's wait; only a budget give-up keeps the wait),
// how many entries to read behind it (0: none), 1 to read the typing report with them, then the
// batch's entries exactly as read. Pops them only if they are still its head; when that empties
// the inbox, frees the lock (if still that token's) in the same step, so no message can arrive
// between "empty" and "free". Returns {0} not the head, {2} popped and lock freed, else {1} popped,
// then (when asked) the new head's entries, its turn state (none: the batch's was just deleted, so
// the new head has none) and the typing report: the next read, in the same step.
export const ackScript = luaScript(`
local count = #ARGV - 4
local ahead = tonumber(ARGV[3])
local entries = redis.call('LRANGE', KEYS[1], 0, count + math.max(ahead, 1) - 1)
if #entries < count then return {0} end
for index = 1, count do
  if entries[index] ~= ARGV[index + 4] then return {0} end
end
redis.call('LTRIM', KEYS[1], count, -1)
-- One DEL for both (a command each otherwise, on every acknowledged batch).
if ARGV[2] == '2' then redis.call('DEL', KEYS[2], KEYS[5]) elseif ARGV[2] ~= '0' then redis.call('DEL', KEYS[2]) end
if #entries == count and ARGV[1] ~= '' and redis.call('GET', KEYS[3]) == ARGV[1] then
  redis.call('DEL', KEYS[3])
  return {2}
end
if ahead == 0 or #entries == count then return {1, {}} end
local next = {}
for index = count + 1, #entries do next[#next + 1] = entries[index] end
local state = {}
if ARGV[2] == '0' then state = redis.call('HGETALL', KEYS[2]) end
local typing = false
if ARGV[4] == '1' then typing = redis.call('GET', KEYS[4]) end
return {1, next, state, typing}`);

// KEYS: inbox, retry. ARGV: the head entry as read, its message id, batch size, ttl (s), the
// running turn's lock token ('' for none), 1 when the read found no turn state at all (nothing to
// check or clear: the state is the head's from here). Freezes the head's batch and marks its turn running.
export const freezeScript = luaScript(`
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[1] then return 0 end
local fields = {'size', ARGV[3]}
if ARGV[5] ~= '' then fields[#fields + 1] = 'running'; fields[#fields + 1] = ARGV[5] end
if ARGV[6] == '1' then
  fields[#fields + 1] = 'messageId'; fields[#fields + 1] = ARGV[2]
elseif redis.call('HGET', KEYS[2], 'messageId') ~= ARGV[2] then
  redis.call('DEL', KEYS[2])
  fields[#fields + 1] = 'messageId'; fields[#fields + 1] = ARGV[2]
end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1`);

// KEYS: typing, lock. ARGV: now (ms), how long the report stands (ms; 0: stopped typing), notice
// channel, conversation key. The lock's holder is told (its turn may hold its reply meanwhile).
export const typingScript = luaScript(`
if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('DEL', KEYS[1]) end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PUBLISH', ARGV[3], 'typing|' .. ARGV[2] .. '|' .. ARGV[4]) end
return 1`);

// KEYS: retry. ARGV: message id. A turn started on the head is started over with whatever arrived
// since: its batch is no longer frozen (nor running), and it is marked restarted.
export const restartScript = luaScript(`
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'size', 'running')
redis.call('HSET', KEYS[1], 'restarted', '1')
return 1`);

// KEYS: retry. ARGV: message id, field, value. Sets a field of the head's turn state, if it is that head's.
export const headFieldScript = luaScript(`
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return 1`);

// KEYS: retry. ARGV: lock token. Clears the running mark of a turn that ended without its worker dying.
export const stoppedScript = luaScript(`
if redis.call('HGET', KEYS[1], 'running') == ARGV[1] then return redis.call('HDEL', KEYS[1], 'running') end
return 0`);

// KEYS: retry. ARGV: message id, now (ms), first delay (ms), max delay (ms), suspect (0/1), ttl (s).
// Returns attempts, suspect attempts, first failure time, next attempt time.
export const failureScript = luaScript(`
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'messageId', ARGV[1])
end
-- A batch frozen before its first failure has no first failure time yet.
redis.call('HSETNX', KEYS[1], 'first', ARGV[2])
redis.call('HDEL', KEYS[1], 'running')
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
local suspect = redis.call('HINCRBY', KEYS[1], 'suspect', tonumber(ARGV[5]))
local delay = math.min(tonumber(ARGV[3]) * 2 ^ math.min(attempts - 1, 40), tonumber(ARGV[4]))
local next = string.format('%.0f', tonumber(ARGV[2]) + delay)
redis.call('HSET', KEYS[1], 'next', next)
redis.call('EXPIRE', KEYS[1], ARGV[6])
return {attempts, suspect, redis.call('HGET', KEYS[1], 'first'), next}`);
