/**
 * Retention by age in Redis, for what the transcripts' purge in MongoDB leaves there: the recent
 * history each conversation's hash keeps (what the model and the widget's history read), the
 * widget's event streams and the details it keeps per message, and the queues' event streams.
 * A history entry carries no time, but none is older than its hash: only a hash created before
 * the cutoff is read further. Its entry goes when its message in MongoDB is older than the cutoff,
 * or comes before such a message, or before the first message in MongoDB that is newer (its own
 * record already purged); a conversation MongoDB no longer has, whose customer wrote nothing
 * since the cutoff, leaves Redis whole. Entries are taken out by id in one script, so a turn
 * appending meanwhile keeps its own; one a turn writes back from an older read goes on the next
 * pass. One pass over the keyspace (SCAN on every master): a scheduled job, never a turn's.
 */
import type { Connection } from 'mongoose';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';
import { CUSTOMER_AT_FIELD, transcriptKeys } from '../store/transcript-keys.js';
import { allKeys } from './redis-stores.js';

const CONVERSATION = new RegExp(`^${KEY_PREFIX}:tx:conv:\\{(.+)\\}$`);
const EVENTS = new RegExp(`^${KEY_PREFIX}:events:\\{`);
const DETAILS = new RegExp(`^${KEY_PREFIX}:events-details:\\{`);

// Removes the entries whose ids are ARGV from the recent history; how many went.
const dropScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], 'recent')
if not raw then return 0 end
local drop = {}
for i = 1, #ARGV do drop[ARGV[i]] = true end
local kept = {}
local recent = cjson.decode(raw)
for _, entry in ipairs(recent) do
  if not drop[entry.id] then kept[#kept + 1] = entry end
end
if #kept == #recent then return 0 end
if #kept == 0 then
  redis.call('HSET', KEYS[1], 'recent', '[]')
else
  redis.call('HSET', KEYS[1], 'recent', cjson.encode(kept))
end
return #recent - #kept
`);

// Deletes a conversation's hash when its customer last wrote before ARGV[1] (ms; or never); 1 if it went.
const forgetScript = luaScript(`
local at = tonumber(redis.call('HGET', KEYS[1], '${CUSTOMER_AT_FIELD}') or '0') or 0
if at >= tonumber(ARGV[1]) then return 0 end
return redis.call('DEL', KEYS[1])
`);

/** The history entries older than the cutoff (see the header); `known`: the time of each entry's message in MongoDB. */
function staleEntries(ids: readonly string[], known: ReadonlyMap<string, number>, cutoff: number): string[] {
  const firstNewer = ids.findIndex((id) => (known.get(id) ?? -Infinity) >= cutoff);
  if (firstNewer >= 0) return ids.slice(0, firstNewer);
  const lastOlder = ids.findLastIndex((id) => (known.get(id) ?? Infinity) < cutoff);
  return ids.slice(0, lastOlder + 1);
}

interface Hot {
  key: string;
  ids: string[];
  createdAt: number;
}

/**
 * One conversation hash created before the cutoff: its stale entries taken out, or the whole hash
 * when MongoDB purged the conversation; how many entries went. Reads by `_id` one at a time (on
 * FerretDB an `$in` scans the collection), at most the history's length.
 */
async function trimConversation(connection: Connection, redis: RedisClient, hot: Hot, cutoff: Date): Promise<number> {
  const hash = transcriptKeys.conversation(hot.key);
  const conversations = connection.collection<{ _id: string }>('conversations');
  // MongoDB purged the conversation (nothing written to it since the cutoff): its hot copy goes whole, name and address too.
  if (!(await conversations.findOne({ _id: hot.key }, { projection: { _id: 1 } }))) {
    if (Number(await forgetScript(redis, [hash], [cutoff.getTime()])) === 1) return hot.ids.length;
  }
  const messages = connection.collection<{ _id: string; createdAt?: Date }>('messages');
  const known = new Map<string, number>();
  for (const id of hot.ids) {
    const message = await messages.findOne({ _id: id }, { projection: { _id: 1, createdAt: 1 } });
    if (message?.createdAt) known.set(id, new Date(message.createdAt).getTime());
    // The rest is newer than the first entry found newer.
    if ((known.get(id) ?? -Infinity) >= cutoff.getTime()) break;
  }
  const stale = staleEntries(hot.ids, known, cutoff.getTime());
  return stale.length ? Number(await dropScript(redis, [hash], stale)) : 0;
}

/** A conversation hash's history ids and creation time (undefined: unreadable). */
async function readHot(redis: RedisClient, key: string, conversationKey: string): Promise<Hot | undefined> {
  const [recent, createdAt] = await redis.hmget(key, 'recent', 'createdAt');
  try {
    const entries = JSON.parse(recent ?? '[]') as { id?: unknown }[];
    const ids = entries.flatMap((entry) => (typeof entry.id === 'string' ? [entry.id] : []));
    return { key: conversationKey, ids, createdAt: Date.parse(createdAt ?? '') || Date.now() };
  } catch {
    return undefined;
  }
}

/** Removes a widget details hash's entries written before the cutoff; how many. */
async function trimDetails(redis: RedisClient, key: string, cutoff: number): Promise<number> {
  const old = Object.entries(await redis.hgetall(key)).flatMap(([field, value]) => {
    try {
      const { at } = JSON.parse(value) as { at?: unknown };
      return typeof at === 'number' && at < cutoff ? [field] : [];
    } catch {
      return [];
    }
  });
  return old.length ? redis.hdel(key, ...old) : 0;
}

/** Removes a stream's entries older than the cutoff (a key of another type is left alone); how many. */
async function trimStream(redis: RedisClient, key: string, cutoff: Date): Promise<number> {
  return (await redis.type(key)) === 'stream' ? Number(await redis.xtrim(key, 'MINID', cutoff.getTime())) : 0;
}

/** One pass: Redis's copies of what is older than the transcripts' cutoff, removed; counts by kind. */
export async function purgeRedisByAge(connection: Connection, redis: RedisClient, queuePrefix: string, cutoff: Date): Promise<Record<string, number>> {
  const counts = { recentHistory: 0, widgetEvents: 0, widgetDetails: 0, queueEvents: 0 };
  for await (const key of allKeys(redis)) {
    const conversationKey = CONVERSATION.exec(key)?.[1];
    if (conversationKey !== undefined) {
      // Every entry of a history was written after its hash was created (a rebuilt one: after its conversation was).
      const hot = await readHot(redis, key, conversationKey);
      if (hot && hot.createdAt < cutoff.getTime()) counts.recentHistory += await trimConversation(connection, redis, hot, cutoff);
    } else if (EVENTS.test(key)) counts.widgetEvents += await trimStream(redis, key, cutoff);
    else if (key.startsWith(`${queuePrefix}:`) && key.endsWith(':events')) counts.queueEvents += await trimStream(redis, key, cutoff);
    else if (DETAILS.test(key)) counts.widgetDetails += await trimDetails(redis, key, cutoff.getTime());
  }
  return counts;
}
