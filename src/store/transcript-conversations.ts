/**
 * A conversation's hot record: its Redis hash under the conversation's hash tag (channel,
 * address, display name, the bounded recent history the model sees, when the customer last wrote
 * and when the history was last written), created or renamed by one script and its history
 * rewritten whole under the conversation's lock. A feature may keep fields of its own in the
 * hash (named `<feature>:<field>`): the turn's open reads every field in its one command, and a
 * feature reading the conversation while that open is in flight in this process joins it
 * (`conversationFields`) instead of sending a command of its own.
 */
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { luaScript } from '../redis.js';
import { CONVERSATION_TTL_SECONDS, CUSTOMER_AT_FIELD, HISTORY_AT_FIELD, transcriptKeys } from './transcript-keys.js';
import { now, type TranscriptContext } from './transcript-records.js';
import { RECENT_MESSAGE_LIMIT, RecentMessageSchema, type TranscriptStore } from './transcript-types.js';

/**
 * A process refreshes a conversation hash's TTL (CONVERSATION_TTL_SECONDS) when it writes its
 * history at most this often, not every turn: a quiet conversation leaves Redis a day early at worst.
 */
const TTL_REFRESH_MS = 24 * 60 * 60 * 1000;
/** Conversations whose last TTL refresh a process remembers (the oldest forgotten first: refreshed again). */
const TTL_REFRESH_MEMORY = 50_000;

// Finds or creates the conversation (its display name kept current); returns created, renamed, recent.
// Run only when a plain read found it missing or renamed: the TTL is refreshed where the history is written (saveRecent).
const openScript = luaScript(`
local stored = redis.call('HMGET', KEYS[1], 'channel', 'displayName', 'recent')
local created = 0
local renamed = 0
if not stored[1] then
  -- Created with its name in the same HSET (one command, not two).
  if ARGV[3] ~= '' then
    redis.call('HSET', KEYS[1], 'channel', ARGV[1], 'address', ARGV[2], 'createdAt', ARGV[4], 'recent', '[]', 'displayName', ARGV[3])
    renamed = 1
  else
    redis.call('HSET', KEYS[1], 'channel', ARGV[1], 'address', ARGV[2], 'createdAt', ARGV[4], 'recent', '[]')
  end
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  created = 1
elseif ARGV[3] ~= '' and stored[2] ~= ARGV[3] then
  redis.call('HSET', KEYS[1], 'displayName', ARGV[3])
  renamed = 1
end
return {created, renamed, stored[3] or '[]'}
`);

// Appends entries (JSON, ARGV[4..]) to the recent history unless there (by id), keeping the newest ARGV[1];
// ARGV[2] the customer's time ('' for none), ARGV[3] now (the history's time). 0: no conversation to append to.
const appendScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], 'recent')
if not raw then return 0 end
local recent = cjson.decode(raw)
local known = {}
for _, entry in ipairs(recent) do known[entry.id] = true end
for i = 4, #ARGV do
  local entry = cjson.decode(ARGV[i])
  if not known[entry.id] then
    known[entry.id] = true
    recent[#recent + 1] = entry
  end
end
local keep = tonumber(ARGV[1])
local from = math.max(1, #recent - keep + 1)
local kept = {}
for i = from, #recent do kept[#kept + 1] = recent[i] end
if #kept == 0 then return 1 end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'recent', cjson.encode(kept), '${HISTORY_AT_FIELD}', ARGV[3], '${CUSTOMER_AT_FIELD}', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'recent', cjson.encode(kept), '${HISTORY_AT_FIELD}', ARGV[3])
end
return 1
`);

type ConversationMethods = Pick<TranscriptStore, 'openConversation' | 'conversationFields' | 'recent' | 'saveRecent' | 'appendRecent'>;

export function createTranscriptConversations({ redis, record }: TranscriptContext, clock: () => number = Date.now): ConversationMethods {
  /** Conversations whose hash's TTL this process set within TTL_REFRESH_MS. */
  const ttlRefreshed = new LRUCache<string, true>({ max: TTL_REFRESH_MEMORY, ttl: TTL_REFRESH_MS });
  /** The opens in flight in this process, by conversation: their read, settled once the conversation is there. */
  const opening = new Map<string, Promise<Readonly<Record<string, string>>>>();

  /** Reads the hash (one HGETALL), then creates or renames the conversation when it must; resolves with what it read and the script's answer. */
  const open = async (key: string, channel: string, address: string, displayName: string | undefined, at: string) => {
    const hash = transcriptKeys.conversation(key);
    // One plain read when the conversation exists and keeps its name (nearly every turn); the
    // script (which reads again) only to create it or rename it.
    const fields = await redis.hgetall(hash);
    const opened: [number, number, string] =
      fields.channel !== undefined && (!displayName || fields.displayName === displayName)
        ? [0, 0, fields.recent ?? '[]']
        : ((await openScript(redis, [hash], [channel, address, displayName ?? '', at, CONVERSATION_TTL_SECONDS])) as [number, number, string]);
    return { fields, opened };
  };

  return {
    async openConversation({ key, channel, address, displayName }, records) {
      const at = now();
      const opened = open(key, channel, address, displayName, at);
      const joined = opened.then(({ fields }) => fields);
      opening.set(key, joined);
      const forget = () => {
        if (opening.get(key) === joined) opening.delete(key);
      };
      joined.then(forget, forget);
      const {
        opened: [created, renamed, recent],
      } = await opened;
      // Created with its TTL just now: its history writes need not set it again today.
      if (created === 1) ttlRefreshed.set(key, true);
      if (records || created === 1 || renamed === 1) {
        // A name new in Redis says so: every writer writes it, whatever it wrote before.
        const named = displayName ? { displayName, ...(created === 1 || renamed === 1 ? { nameChanged: true as const } : {}) } : {};
        await record(records, [{ kind: 'conversation', _id: key, channel, address, ...named, at }]);
      }
      return { conversationId: key, created: created === 1, recent: z.array(RecentMessageSchema).parse(JSON.parse(recent)) };
    },

    async conversationFields(key) {
      const joined = opening.get(key);
      if (joined) return { exists: true, fields: await joined };
      const fields = await redis.hgetall(transcriptKeys.conversation(key));
      return { exists: fields.channel !== undefined, fields };
    },

    async recent(conversationId) {
      const raw = await redis.hget(transcriptKeys.conversation(conversationId), 'recent');
      return raw === null ? [] : z.array(RecentMessageSchema).parse(JSON.parse(raw));
    },

    async saveRecent(conversationId, recent, customerAt) {
      const hash = transcriptKeys.conversation(conversationId);
      const fields: Record<string, string> = { recent: JSON.stringify(recent.slice(-RECENT_MESSAGE_LIMIT)), [HISTORY_AT_FIELD]: String(clock()) };
      if (customerAt !== undefined) fields[CUSTOMER_AT_FIELD] = String(customerAt);
      if (ttlRefreshed.has(conversationId)) {
        // Its TTL was set by this process within a day (a hash lost meanwhile is created again, TTL and all, when opened).
        await redis.hset(hash, fields);
        return;
      }
      // One round trip, no script: a failed EXPIRE only leaves the TTL the last write set.
      const results = await redis.pipeline().hset(hash, fields).expire(hash, CONVERSATION_TTL_SECONDS).exec();
      for (const [error] of results ?? []) if (error) throw error;
      ttlRefreshed.set(conversationId, true);
    },

    async appendRecent(conversationId, entries, customerAt) {
      if (entries.length === 0) return;
      await appendScript(
        redis,
        [transcriptKeys.conversation(conversationId)],
        [String(RECENT_MESSAGE_LIMIT), customerAt === undefined ? '' : String(customerAt), String(clock()), ...entries.map((entry) => JSON.stringify(entry))],
      );
    },
  };
}
