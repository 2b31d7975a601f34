/**
 * A person's data in Redis, found without knowing every module's key layout: every key whose
 * name carries one of the person's identifiers (a conversation key is the hash tag of every key
 * of that conversation; a reply's ledger, a delivery id, a dedupe mark, a hand-off's state, a
 * visitor's rate limits and the contact index's entries carry a message id, a hand-off id, a
 * visitor id, the number or the e-mail), read for an export and deleted for an erasure; and,
 * in the structures shared by everyone, the entries that mention the person: the transcript
 * outbox and its dead letters (records not yet in MongoDB), the queues' event streams, the
 * reports' sets and hashes of conversations (a member is replaced by an opaque id, so the
 * counts stay) and the list of unanswered questions (by the person's words), with those still
 * riding in the usage store's pending entries (`src/store/usage-pending.ts`).
 * BullMQ's own keys are the queue step's (`queue-stores.ts`). One pass over the keyspace per
 * call (SCAN on every master of a cluster): an operator's request, never a turn's.
 */
import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { QUIET_KEY as CSAT_QUIET } from '../csat/csat-queue.js';
import { PENDING_USAGE_KEY, erasePendingMissNotes, pendingMissNotes } from '../store/usage-pending.js';

/** What identifies the person in key names and in shared entries. */
export interface RedisNeedles {
  /** Matched in key names, bounded by non-alphanumerics (`+4477…` never matches `+44771…`). */
  names: string[];
  /** Matched anywhere in a shared structure's entry (conversation keys, message and hand-off ids). */
  values: string[];
  /** The person's own words: an unanswered question holding one of them is theirs. */
  texts: string[];
}

const MISSES_KEY = `${KEY_PREFIX}:knowledge:misses`;
const SHARED_STREAM = new RegExp(`^${KEY_PREFIX}:tx:outbox(-dead)?:`);
const REPORTS = new RegExp(`^${KEY_PREFIX}:\\{reports:`);

export async function* allKeys(redis: RedisClient, match = '*'): AsyncGenerator<string> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      yield* keys;
    } while (cursor !== '0');
  }
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A test of a key name against the needles, each bounded by a non-alphanumeric character or the name's ends. */
function nameMatcher(needles: readonly string[]): (name: string) => boolean {
  const unique = [...new Set(needles.filter((needle) => needle.length >= 4))];
  if (unique.length === 0) return () => false;
  const pattern = new RegExp(`(?:^|[^A-Za-z0-9])(?:${unique.map(escapeRegExp).join('|')})(?:$|[^A-Za-z0-9])`, 'i');
  return (name) => pattern.test(name);
}

const mentions = (needles: readonly string[]) => (text: string) => needles.some((needle) => needle.length >= 4 && text.includes(needle));

/** A question and a message of the person match when one holds the other and the shorter is at least this long. */
const MIN_QUOTED = 12;

/** Whether `outer` holds `inner` whole (a message's record adds a media note before the words; a question, what the model was told of a voice note after them). */
const quotes = (outer: string, inner: string) => inner.length >= MIN_QUOTED && outer.includes(inner);

/** Whether an unanswered question's entry holds one of the person's messages (the list keeps its first 500 characters). */
const askedBy = (texts: readonly string[]) => (entry: string) => {
  try {
    const { question } = JSON.parse(entry) as { question?: unknown };
    return typeof question === 'string' && question.length > 0 && texts.some((text) => text === question || quotes(text, question) || quotes(question, text));
  } catch {
    return false;
  }
};

/** A segment of a key name kept in its family: a word of the key layout (lowercase, no digit), never an id. */
const LAYOUT_WORD = /^[a-z][a-z_-]{0,15}$/;

/**
 * A key family for counting (what the erasure's record keeps): the name with its hash tags and
 * every segment that is not a word of the key layout folded, so no id — a message, a visitor, a
 * number, or what a client chose as its message id — outlives the erasure in its record.
 */
function familyOf(key: string): string {
  return key
    .replace(/\{[^}]*\}/g, '{…}')
    .split(':')
    .map((segment) => (segment === '{…}' || LAYOUT_WORD.test(segment) ? segment : '…'))
    .join(':')
    .replace(/…(?::…)+/g, '…');
}

/** The key's value, whatever its type (for an export). */
async function readValue(redis: RedisClient, key: string): Promise<unknown> {
  const type = await redis.type(key);
  if (type === 'string') return redis.get(key);
  if (type === 'hash') return redis.hgetall(key);
  if (type === 'list') return redis.lrange(key, 0, -1);
  if (type === 'set') return redis.smembers(key);
  if (type === 'zset') return redis.zrange(key, '0', '-1');
  if (type === 'stream') return (await redis.xrange(key, '-', '+')).map(([, fields]) => fields);
  return undefined;
}

/** Whether a key is BullMQ's (the queue step reads and removes jobs through BullMQ). */
const isQueueKey = (queuePrefix: string) => (key: string) => key.startsWith(`${queuePrefix}:`);

/** The person's keys and their values, by key family. */
export async function exportRedis(redis: RedisClient, needles: RedisNeedles, queuePrefix: string): Promise<Record<string, unknown[]>> {
  const matches = nameMatcher(needles.names);
  const queue = isQueueKey(queuePrefix);
  const found: Record<string, unknown[]> = {};
  const pending: string[] = [];
  for await (const key of allKeys(redis)) {
    if (PENDING_USAGE_KEY.test(key)) pending.push(...(await pendingMissNotes(redis, key)));
    if (queue(key) || !matches(key)) continue;
    (found[familyOf(key)] ??= []).push(await readValue(redis, key));
  }
  // The listed ones, and those a turn recorded that no usage fold has listed yet.
  const misses = [...(await redis.lrange(MISSES_KEY, 0, -1)), ...pending].filter(askedBy(needles.texts));
  if (misses.length) found['unanswered questions'] = misses.map((entry) => JSON.parse(entry) as unknown);
  return found;
}

/** Deletes the entries of a stream that mention the person; how many. */
async function eraseStreamEntries(redis: RedisClient, key: string, test: (text: string) => boolean): Promise<number> {
  const ids = (await redis.xrange(key, '-', '+')).filter(([, fields]) => test(fields.join('\n'))).map(([id]) => id);
  if (ids.length) await redis.xdel(key, ...ids);
  return ids.length;
}

/** Removes the members of a sorted set that name the person (the rating question's quiet checks); how many. */
async function eraseMembers(redis: RedisClient, key: string, test: (text: string) => boolean): Promise<number> {
  const members = (await redis.zrange(key, '0', '-1')).filter(test);
  return members.length ? redis.zrem(key, ...members) : 0;
}

/** Replaces what names the person in a reports set (members) or hash (fields) by opaque ids, so the counts stay; how many. */
async function anonymiseReports(redis: RedisClient, key: string, test: (text: string) => boolean, opaque: (text: string) => string): Promise<number> {
  const type = await redis.type(key);
  let replaced = 0;
  if (type === 'set') {
    for (const member of (await redis.smembers(key)).filter(test)) {
      await redis.sadd(key, opaque(member));
      replaced += await redis.srem(key, member);
    }
  }
  if (type === 'hash') {
    for (const [field, value] of Object.entries(await redis.hgetall(key))) {
      if (!test(field) && !test(value)) continue;
      await redis.hset(key, opaque(field), test(value) ? opaque(value) : value);
      replaced += await redis.hdel(key, field);
    }
  }
  return replaced;
}

/** Removes the person from Redis (see the header); counts by key family. */
export async function eraseRedis(
  redis: RedisClient,
  needles: RedisNeedles,
  queuePrefix: string,
  erasureId: string,
  /** Keys left alone: the conversation locks the erasure holds. */
  keep: ReadonlySet<string> = new Set(),
): Promise<Record<string, number>> {
  const matches = nameMatcher(needles.names);
  const queue = isQueueKey(queuePrefix);
  const mentioned = (text: string) => mentions(needles.values)(text) || matches(text);
  const opaque = (text: string) => `erased:${createHash('sha256').update(`${erasureId}\n${text}`).digest('base64url').slice(0, 16)}`;
  const counts: Record<string, number> = {};
  const add = (family: string, count: number) => {
    if (count > 0) counts[family] = (counts[family] ?? 0) + count;
  };
  for await (const key of allKeys(redis)) {
    if (keep.has(key)) continue;
    if (queue(key)) {
      if (key.endsWith(':events')) add('queue events', await eraseStreamEntries(redis, key, mentioned));
      continue;
    }
    if (matches(key)) {
      add(familyOf(key), await redis.del(key));
      continue;
    }
    if (key === CSAT_QUIET) add('rating checks', await eraseMembers(redis, key, mentioned));
    else if (SHARED_STREAM.test(key)) add(familyOf(key), await eraseStreamEntries(redis, key, mentioned));
    else if (REPORTS.test(key)) add('reports (anonymised)', await anonymiseReports(redis, key, mentioned, opaque));
    else if (PENDING_USAGE_KEY.test(key)) add('unanswered questions', await erasePendingMissNotes(redis, key, askedBy(needles.texts)));
  }
  const personal = askedBy(needles.texts);
  for (const entry of await redis.lrange(MISSES_KEY, 0, -1)) if (personal(entry)) add('unanswered questions', await redis.lrem(MISSES_KEY, 0, entry));
  return counts;
}
