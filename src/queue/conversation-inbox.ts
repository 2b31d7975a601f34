/**
 * Per-conversation inboxes in Redis: the arrival order of a conversation's messages. The web
 * side appends (once per message id: dedupe and append are one atomic script); a worker holding
 * the conversation's lock reads a batch from the head, answers it with one turn, then removes
 * it — so a worker killed mid-turn leaves the batch at the head for the next one.
 *
 * The inbox also keeps the turn state of its head (only the head's batch can be in a turn):
 * how many messages its batch holds once a turn started on it (frozen, so a retry or the next
 * worker answers exactly the same batch and resumes the same reply, whatever arrived since),
 * and its retry state: when it first failed, how many attempts, when the next one is due. It is
 * the one place attempts are counted, and it is cleared when the batch is removed. Scripts never
 * decode message text: a batch is acknowledged by comparing the exact stored entries (placing a
 * takeover's end reads only which entries are a teammate's).
 *
 * A takeover's end (handed back or closed) is not appended but placed after the teammate's last
 * waiting entry, ahead of the customer messages waiting behind it: the customer is told the
 * assistant is back before the assistant answers them (see `takeover-inbound.ts`).
 */
import { luaScript, type RedisClient } from '../redis.js';
import { AppError } from '../errors/index.js';
import { z } from 'zod';
import { InboundMessageSchema, type InboundMessage } from '../contracts/index.js';
import { DEDUPE_TTL_SECONDS, INBOX_NOTICE_CHANNEL, INBOX_TTL_SECONDS, QUEUED_TTL_MS, redisKeys } from './keys.js';
import type { LockRequest } from './conversation-lock.js';

/** The most messages one turn answers (the judge sees the last six messages of a conversation). */
export const MAX_BATCH_MESSAGES = 5;

const HeadStateSchema = z.object({
  messageId: z.string().min(1),
  size: z.coerce.number().int().positive().optional(),
  /** The lock token of the turn running on the batch; left behind only by a worker that died in it. */
  running: z.string().min(1).optional(),
  /** How many workers died in a turn on this batch (`turn-deaths.ts`). */
  crashes: z.coerce.number().int().nonnegative().optional(),
  /** Why the batch was given up on, once it was (the decision stands for whoever holds it next). */
  given: z.string().min(1).optional(),
  /** A turn on this head was started over for a message that arrived during it: the next one waits for the quiet period. */
  restarted: z.string().min(1).optional(),
});
const RetryStateSchema = z.object({
  first: z.coerce.number().int().nonnegative(),
  attempts: z.coerce.number().int().nonnegative(),
  suspect: z.coerce.number().int().nonnegative(),
  next: z.coerce.number().int().nonnegative(),
});

// KEYS: dedupe, inbox, lock, queued. ARGV: payload, dedupe ttl (s), inbox ttl (s), queued ttl (ms),
// notice channel ('' for none), conversation key. Returns 0 a duplicate, 1 appended (the caller
// adds a job: marked queued), 2 appended while the conversation's lock is held (its holder is told
// on the notice channel, with the inbox's new length), 3 appended while a job added for it has not
// yet tried the lock.
const acceptScript = luaScript(`
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  local length = redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
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
const takeoverEndScript = luaScript(`
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
const ackScript = luaScript(`
local count = #ARGV - 4
local ahead = tonumber(ARGV[3])
local entries = redis.call('LRANGE', KEYS[1], 0, count + math.max(ahead, 1) - 1)
if #entries < count then return {0} end
for index = 1, count do
  if entries[index] ~= ARGV[index + 4] then return {0} end
end
redis.call('LTRIM', KEYS[1], count, -1)
if ARGV[2] ~= '0' then redis.call('DEL', KEYS[2]) end
if ARGV[2] == '2' then redis.call('DEL', KEYS[5]) end
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
const freezeScript = luaScript(`
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
const typingScript = luaScript(`
if tonumber(ARGV[2]) > 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('DEL', KEYS[1]) end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PUBLISH', ARGV[3], 'typing|' .. ARGV[2] .. '|' .. ARGV[4]) end
return 1`);

// KEYS: retry. ARGV: message id. A turn started on the head is started over with whatever arrived
// since: its batch is no longer frozen (nor running), and it is marked restarted.
const restartScript = luaScript(`
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'size', 'running')
redis.call('HSET', KEYS[1], 'restarted', '1')
return 1`);

// KEYS: retry. ARGV: message id, field, value. Sets a field of the head's turn state, if it is that head's.
const headFieldScript = luaScript(`
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return 1`);

// KEYS: retry. ARGV: lock token. Clears the running mark of a turn that ended without its worker dying.
const stoppedScript = luaScript(`
if redis.call('HGET', KEYS[1], 'running') == ARGV[1] then return redis.call('HDEL', KEYS[1], 'running') end
return 0`);

// KEYS: retry. ARGV: message id, now (ms), first delay (ms), max delay (ms), suspect (0/1), ttl (s).
// Returns attempts, suspect attempts, first failure time, next attempt time.
const failureScript = luaScript(`
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

/** How often and since when the inbox head has failed, and when it may be tried again. */
export interface RetryState {
  attempts: number;
  /** Attempts that failed for a reason not known to be an outage. */
  suspectAttempts: number;
  firstFailureAt: number;
  nextAttemptAt: number;
}

export interface InboxEntry {
  message: InboundMessage;
  /** The entry as stored; acknowledging compares it, so nothing needs to decode it in Redis. */
  raw: string;
}

/** The messages at the head of an inbox that one turn answers, oldest first (never empty). */
export interface InboxBatch {
  entries: readonly [InboxEntry, ...InboxEntry[]];
  /** A turn started on this batch before: it is exactly these messages, whatever arrived since. */
  frozen: boolean;
  /** Set when this batch failed before. */
  retry?: RetryState;
  /** The lock token of a turn marked running on this batch and never ended: its worker died in it (unless it is this holder's own). */
  running?: string;
  /** How many workers died in a turn on this batch. */
  crashes: number;
  /** Set once the batch was given up on, with the reason; whoever holds it next finishes giving up. */
  givenUp?: string;
  /** A turn on this head was started over once (`restart`): the next waits for the quiet period and is never started over again. */
  restarted: boolean;
  /** How many entries were read behind the batch (a batch with some can't grow by a new arrival). */
  behind: number;
  /** When the customer last reported typing, while that report stands (ms); read only for a batch that may coalesce (`maxMessages` > 1). */
  typingAt?: number;
  /** The read found no turn state at all (neither this head's nor one left by another): freezing it has nothing to check or clear. */
  stateless: boolean;
}

export interface RetryPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
}

export interface ConversationInbox {
  /**
   * Appends a message unless its id was seen: `duplicate` (e.g. a Twilio retry), `appended` (the
   * caller adds its job; the conversation is marked queued until that job tries the lock), or
   * appended where it needs no job of its own, one would only find the lock taken and complete:
   *   - `held`: a worker holds the conversation's lock; it answers the message before it lets
   *     go (it frees the lock only in the step that empties the inbox, or re-checks the inbox
   *     after freeing it; a killed holder's own job is run again);
   *   - `queued`: a job added for the conversation has not yet tried the lock; whoever gets the
   *     lock reads the inbox after this message was appended.
   * A takeover's end goes right after the last teammate entry, ahead of waiting customer
   * messages, never into the head's batch while it may be in a turn.
   */
  accept(message: InboundMessage): Promise<'appended' | 'held' | 'queued' | 'duplicate'>;
  /**
   * The customer is typing (`standsMs` > 0: the report stands that long) or stopped (0). A worker
   * holding the conversation is told on the notice channel.
   */
  reportTyping(conversationKey: string, standsMs: number): Promise<void>;
  /**
   * Starts the head's turn over with whatever arrived since (a message arrived before anything of
   * the turn left): its batch is no longer frozen, and it is marked restarted.
   */
  restart(conversationKey: string, messageId: string): Promise<void>;
  /** Clears the queued mark after adding the job `accept` asked for failed (the caller answers 503). */
  unmarkQueued(conversationKey: string): Promise<void>;
  /**
   * The head's batch: the batch a turn already started on (frozen), else the oldest unanswered
   * messages, up to `maxMessages` and up to the first unreadable one; undefined when empty. The
   * typing report is read only when `maxMessages` > 1: one turn per message never waits on it.
   */
  batch(conversationKey: string, maxMessages: number): Promise<InboxBatch | undefined>;
  /**
   * Sends the conversation lock's request and the head's read in one round trip: whether the
   * lock was acquired, and (read only by its holder) the head's batch as `batch` would return
   * it (throwing as it would).
   */
  lockAndBatch(conversationKey: string, maxMessages: number, lock: LockRequest): Promise<{ acquired: boolean; batch: () => InboxBatch | undefined }>;
  /**
   * Fixes the batch before its turn starts, so every later attempt answers the same messages;
   * with the holder's lock token, also marks the turn running (a mark only a worker that dies
   * in the turn leaves behind: `recordFailure`, `acknowledge` and `turnStopped` clear it).
   */
  freeze(conversationKey: string, batch: InboxBatch, runningToken?: string): Promise<InboxBatch>;
  /** Marks the turn of a frozen head's batch running (as `freeze` does for a batch it freezes). */
  markRunning(conversationKey: string, messageId: string, runningToken: string): Promise<void>;
  /** Clears the running mark of a turn that ended without its worker dying (cut short, not failed). */
  turnStopped(conversationKey: string, runningToken: string): Promise<void>;
  /** Records that the head's batch is given up on, so a holder after a lost lock finishes that instead of another turn. */
  markGivenUp(conversationKey: string, messageId: string, reason: string): Promise<void>;
  /**
   * Removes the batch once it has been answered (or given up on), with its turn state. With the
   * holder's lock token, an inbox left empty frees the lock in the same step: true when it did.
   */
  acknowledge(conversationKey: string, batch: InboxBatch, lockToken?: string): Promise<boolean>;
  /**
   * `acknowledge` by the lock's holder, which goes on with the conversation: the same step reads
   * the new head's batch (as `batch` would return it, throwing as it would) unless it freed the
   * lock. The batch's turn state is deleted in that step, so the new head's is known to be none;
   * as is the conversation's wait (`conversation-outage.ts`) unless `keepsWait` (a budget give-up).
   */
  acknowledgeAndBatch(
    conversationKey: string,
    batch: InboxBatch,
    lockToken: string,
    maxMessages: number,
    keepsWait?: boolean,
  ): Promise<{ released: boolean; batch?: () => InboxBatch | undefined }>;
  /** Drops a head that can't be parsed, so one corrupt entry never blocks a conversation. */
  discardHead(conversationKey: string): Promise<void>;
  size(conversationKey: string): Promise<number>;
  /** Counts a failed attempt at the head's batch (by its first message) and schedules the next one (delay doubling). */
  recordFailure(conversationKey: string, messageId: string, options: RetryPolicy & { suspect: boolean; now: number }): Promise<RetryState>;
}

/** An inbox head that can't be read back (not JSON, or not an inbound message): set aside, never retried. */
export class CorruptInboxEntryError extends AppError {}

/** Text as it enters the inbox: well-formed UTF-16 (a lone surrogate becomes U+FFFD). */
function sanitise(message: InboundMessage): InboundMessage {
  return {
    ...message,
    text: message.text.toWellFormed(),
    from: { ...message.from, ...(message.from.displayName ? { displayName: message.from.displayName.toWellFormed() } : {}) },
  };
}

/** An entry read back as an inbound message, or undefined when it is not JSON or not one. */
function readEntry(raw: string): InboundMessage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = InboundMessageSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** The head's batch from what LRANGE (up to MAX_BATCH_MESSAGES), HGETALL of its turn state and GET of the typing mark (if read) returned. */
function headBatch(conversationKey: string, maxMessages: number, raws: readonly string[], stored: unknown, typing?: unknown): InboxBatch | undefined {
  const entries: InboxEntry[] = [];
  for (const raw of raws) {
    const message = readEntry(raw);
    if (message) entries.push({ message, raw });
    else if (entries.length === 0) throw new CorruptInboxEntryError(`inbox head of ${conversationKey} is not an inbound message`);
    else break;
  }
  // A takeover entry (a teammate's message or action) is a batch of its own: customer
  // messages are never coalesced with it, nor it with them.
  const takeoverAt = entries.findIndex((entry) => entry.message.teammate !== undefined);
  if (takeoverAt >= 0) entries.splice(Math.max(1, takeoverAt));
  const [head, ...rest] = entries;
  if (!head) return undefined;
  const state = HeadStateSchema.safeParse(stored);
  const ours = state.success && state.data.messageId === head.message.messageId;
  const retried = ours ? RetryStateSchema.safeParse(stored) : undefined;
  const retry = retried?.success
    ? { attempts: retried.data.attempts, suspectAttempts: retried.data.suspect, firstFailureAt: retried.data.first, nextAttemptAt: retried.data.next }
    : undefined;
  // A head that failed before its batch was frozen (an older release) is a batch of one.
  const frozenSize = ours ? (state.data.size ?? (retry ? 1 : undefined)) : undefined;
  const size = Math.max(1, Math.min(frozenSize ?? maxMessages, entries.length));
  const running = ours ? state.data.running : undefined;
  const givenUp = ours ? state.data.given : undefined;
  const typingAt = typeof typing === 'string' ? Number(typing) : NaN;
  return {
    entries: [head, ...rest.slice(0, size - 1)],
    frozen: frozenSize !== undefined,
    // Only a read that returned the state (an empty hash) knows there is none; a failed one does not.
    stateless: typeof stored === 'object' && stored !== null && Object.keys(stored).length === 0,
    crashes: ours ? (state.data.crashes ?? 0) : 0,
    restarted: ours && state.data.restarted !== undefined,
    behind: raws.length - size,
    ...(Number.isFinite(typingAt) ? { typingAt } : {}),
    ...(retry ? { retry } : {}),
    ...(running ? { running } : {}),
    ...(givenUp ? { givenUp } : {}),
  };
}

export function createConversationInbox(redis: RedisClient): ConversationInbox {
  /** The acknowledgement (see `ackScript`); `maxMessages` > 0 reads the next batch in the same step (the typing report with it when > 1). */
  const acknowledgeScript = async (
    conversationKey: string,
    batch: InboxBatch,
    lockToken: string,
    maxMessages: number,
    keepsWait = false,
  ): Promise<unknown[]> => {
    const keys = [redisKeys.inbox(conversationKey), redisKeys.retry(conversationKey), redisKeys.lock(conversationKey), redisKeys.typing(conversationKey)];
    const result = await ackScript(
      redis,
      [...keys, redisKeys.outage(conversationKey)],
      // Only a batch that was frozen or failed left turn state to clear (a stale one for another head is never read as its).
      [
        lockToken,
        !keepsWait ? 2 : batch.frozen || batch.retry || batch.crashes > 0 || batch.givenUp || batch.restarted ? 1 : 0,
        maxMessages > 0 ? MAX_BATCH_MESSAGES : 0,
        maxMessages > 1 ? 1 : 0,
        ...batch.entries.map((entry) => entry.raw),
      ],
    );
    return Array.isArray(result) ? result : [result];
  };
  return {
    async accept(message) {
      const keys = [
        redisKeys.dedupe(message.conversationKey, message.messageId),
        redisKeys.inbox(message.conversationKey),
        redisKeys.lock(message.conversationKey),
        redisKeys.queued(message.conversationKey),
      ];
      const args = [JSON.stringify(sanitise(message)), DEDUPE_TTL_SECONDS, INBOX_TTL_SECONDS, QUEUED_TTL_MS];
      const action = message.teammate?.action;
      // A takeover entry is never coalesced: it can't grow the batch a turn runs on, so its holder is not told.
      const notices = message.teammate ? '' : INBOX_NOTICE_CHANNEL;
      const appended =
        action === 'handed_back' || action === 'closed'
          ? await takeoverEndScript(redis, [...keys, redisKeys.retry(message.conversationKey)], [...args, MAX_BATCH_MESSAGES])
          : await acceptScript(redis, keys, [...args, notices, message.conversationKey]);
      return appended === 3 ? 'queued' : appended === 2 ? 'held' : appended === 1 ? 'appended' : 'duplicate';
    },

    async reportTyping(conversationKey, standsMs) {
      await typingScript(
        redis,
        [redisKeys.typing(conversationKey), redisKeys.lock(conversationKey)],
        [Date.now(), Math.max(0, Math.round(standsMs)), INBOX_NOTICE_CHANNEL, conversationKey],
      );
    },

    async restart(conversationKey, messageId) {
      await restartScript(redis, [redisKeys.retry(conversationKey)], [messageId]);
    },

    async unmarkQueued(conversationKey) {
      await redis.del(redisKeys.queued(conversationKey));
    },

    async batch(conversationKey, maxMessages) {
      const read = redis
        .pipeline()
        .lrange(redisKeys.inbox(conversationKey), 0, MAX_BATCH_MESSAGES - 1)
        .hgetall(redisKeys.retry(conversationKey));
      const results = await (maxMessages > 1 ? read.get(redisKeys.typing(conversationKey)) : read).exec();
      const [rangeResult, stateResult, typingResult] = results ?? [];
      if (rangeResult?.[0]) throw rangeResult[0];
      return headBatch(conversationKey, maxMessages, (rangeResult?.[1] ?? []) as string[], stateResult?.[1], typingResult?.[1]);
    },

    async lockAndBatch(conversationKey, maxMessages, lock) {
      // The queued mark goes once a job tried the lock: a message appended after that finds the
      // lock held (its holder reads on), or adds a job of its own.
      const read = redis
        .pipeline()
        .set(lock.key, lock.token, 'PX', lock.ttlMs, 'NX')
        .del(redisKeys.queued(conversationKey))
        .lrange(redisKeys.inbox(conversationKey), 0, MAX_BATCH_MESSAGES - 1)
        .hgetall(redisKeys.retry(conversationKey));
      const results = await (maxMessages > 1 ? read.get(redisKeys.typing(conversationKey)) : read).exec();
      const [setResult, , rangeResult, stateResult, typingResult] = results ?? [];
      if (setResult?.[0]) throw setResult[0];
      return {
        acquired: setResult?.[1] === 'OK',
        batch: () => {
          if (rangeResult?.[0]) throw rangeResult[0];
          return headBatch(conversationKey, maxMessages, (rangeResult?.[1] ?? []) as string[], stateResult?.[1], typingResult?.[1]);
        },
      };
    },

    async freeze(conversationKey, batch, runningToken) {
      const [head] = batch.entries;
      const frozen = await freezeScript(
        redis,
        [redisKeys.inbox(conversationKey), redisKeys.retry(conversationKey)],
        [head.raw, head.message.messageId, batch.entries.length, INBOX_TTL_SECONDS, runningToken ?? '', batch.stateless ? 1 : 0],
      );
      // Only its lock holder changes an inbox's head: a head that moved is a bug, not a race.
      if (frozen !== 1) throw new Error(`the inbox head of ${conversationKey} changed under its lock`);
      return { ...batch, frozen: true, stateless: false };
    },

    async acknowledge(conversationKey, batch, lockToken) {
      const [popped] = await acknowledgeScript(conversationKey, batch, lockToken ?? '', 0);
      return popped === 2;
    },

    async acknowledgeAndBatch(conversationKey, batch, lockToken, maxMessages, keepsWait) {
      const [popped, raws, state, typing] = await acknowledgeScript(conversationKey, batch, lockToken, maxMessages, keepsWait);
      if (popped === 2) return { released: true };
      // Not the head any more (only a holder that lost the lock): nothing was read.
      if (popped !== 1 || !Array.isArray(raws)) return { released: false };
      const entries = raws.filter((raw): raw is string => typeof raw === 'string');
      const stored: Record<string, string> = {};
      if (Array.isArray(state)) for (let index = 0; index + 1 < state.length; index += 2) stored[String(state[index])] = String(state[index + 1]);
      return { released: false, batch: () => headBatch(conversationKey, maxMessages, entries, stored, typing) };
    },

    async markRunning(conversationKey, messageId, runningToken) {
      await headFieldScript(redis, [redisKeys.retry(conversationKey)], [messageId, 'running', runningToken]);
    },

    async turnStopped(conversationKey, runningToken) {
      await stoppedScript(redis, [redisKeys.retry(conversationKey)], [runningToken]);
    },

    async markGivenUp(conversationKey, messageId, reason) {
      await headFieldScript(redis, [redisKeys.retry(conversationKey)], [messageId, 'given', reason]);
    },

    async discardHead(conversationKey) {
      await redis.multi().lpop(redisKeys.inbox(conversationKey)).del(redisKeys.retry(conversationKey)).exec();
    },

    size(conversationKey) {
      return redis.llen(redisKeys.inbox(conversationKey));
    },

    async recordFailure(conversationKey, messageId, { now, firstDelayMs, maxDelayMs, suspect }) {
      const result = (await failureScript(
        redis,
        [redisKeys.retry(conversationKey)],
        [messageId, now, firstDelayMs, maxDelayMs, suspect ? 1 : 0, DEDUPE_TTL_SECONDS],
      )) as [number, number, string, string];
      return {
        attempts: Number(result[0]),
        suspectAttempts: Number(result[1]),
        firstFailureAt: Number(result[2]),
        nextAttemptAt: Number(result[3]),
      };
    },
  };
}
