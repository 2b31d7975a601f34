/**
 * Uploads waiting for a message, in Redis: an upload is reserved (its id chosen) before its first
 * byte is stored, counted against its owner's pending count and bytes, claimed by the one message
 * that names it, and deleted by the sweep when no message named it within the unclaimed TTL.
 *
 * Keys (one `{media-uploads:<database>}` hash tag: every script touches keys of this one slot;
 * the media store's database names it, as the uploads are that database's files):
 * - `…:unclaimed` — a sorted set of `<id> <owner>`, scored by when the upload expires unclaimed
 *   (its reservation time plus the TTL); the sweep reads it by score, never MongoDB.
 * - `…:owner:<owner>` — a hash of the owner's pending uploads, id → bytes (reserved, then stored).
 * - `…:claim:<id>` — the message that claimed the upload (or `expired`, once the sweep took it);
 *   kept a day, so a message sent again (same id, e.g. after a lost answer) is still accepted.
 *
 * An id is usable by one message: a claim succeeds only for an upload still pending for the
 * owner, or one this same message claimed already.
 */
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

const CLAIM_TTL_SECONDS = 24 * 60 * 60;
const EXPIRED = 'expired';
const SWEEP_BATCH = 100;

// KEYS: owner hash, unclaimed set. ARGV: id, wanted bytes, max count, max bytes, expiry time, owner hash TTL (ms), member.
// Returns {1, granted bytes} or {0, count, bytes} (too many) or {-1, count, bytes} (no bytes left).
const reserveScript = luaScript(`
local entries = redis.call('HGETALL', KEYS[1])
local count, total = 0, 0
for i = 2, #entries, 2 do
  count = count + 1
  total = total + tonumber(entries[i])
end
if count >= tonumber(ARGV[3]) then return {0, count, total} end
local room = tonumber(ARGV[4]) - total
if room <= 0 then return {-1, count, total} end
local granted = math.min(tonumber(ARGV[2]), room)
redis.call('HSET', KEYS[1], ARGV[1], granted)
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[7])
return {1, granted}
`);

// KEYS: owner hash. ARGV: id, bytes (0: drop the entry). Only an entry still there is changed.
const settleScript = luaScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if tonumber(ARGV[2]) == 0 then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
`);

// KEYS: unclaimed set, owner hash, claim key per id. ARGV: message id, owner, claim TTL (s), ids…
// Returns '' when every id is (now) this message's, else the first id that is not.
const claimScript = luaScript(`
local n = #KEYS - 2
for i = 1, n do
  local id = ARGV[3 + i]
  local claimed = redis.call('GET', KEYS[2 + i])
  if claimed then
    if claimed ~= ARGV[1] then return id end
  elseif redis.call('HEXISTS', KEYS[2], id) == 0 then
    return id
  end
end
for i = 1, n do
  local id = ARGV[3 + i]
  if not redis.call('GET', KEYS[2 + i]) then
    redis.call('SET', KEYS[2 + i], ARGV[1], 'EX', ARGV[3])
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[1], id .. ' ' .. ARGV[2])
  end
end
return ''
`);

// KEYS: unclaimed set, owner hash, claim key. ARGV: member, id, claim TTL (s).
// 1: the upload is the sweep's to delete (no message can claim it any more); 0: a message has it.
const expireScript = luaScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local claimed = redis.call('GET', KEYS[3])
if claimed and claimed ~= '${EXPIRED}' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
redis.call('SET', KEYS[3], '${EXPIRED}', 'EX', ARGV[3])
redis.call('HDEL', KEYS[2], ARGV[2])
return 1
`);

export type Reservation = { ok: true; grantedBytes: number } | { ok: false; reason: 'count' | 'bytes'; count: number; bytes: number };

export interface UploadClaims {
  /**
   * Reserves room for one upload of at most `bytes` (its id chosen by the caller): refused when the
   * owner has `maxCount` pending uploads or `maxBytes` pending bytes; otherwise granted up to the
   * bytes left. From now on the sweep deletes the upload (and any chunk of it) unless a message claims it.
   */
  reserve(owner: string, id: string, bytes: number, limits: { maxCount: number; maxBytes: number }): Promise<Reservation>;
  /** The upload is stored with `bytes`: it counts that much while pending. */
  stored(owner: string, id: string, bytes: number): Promise<void>;
  /** The upload failed: it no longer counts (the sweep still removes whatever it left). */
  release(owner: string, id: string): Promise<void>;
  /** Claims `ids` for `messageId`, all or none; the id refused first otherwise. */
  claim(owner: string, ids: readonly string[], messageId: string): Promise<{ ok: true } | { ok: false; id: string }>;
  /**
   * Deletes (through `remove`) each upload no message claimed whose TTL ended by `now`; returns
   * how many. A sweep that dies midway is finished by the next one.
   */
  sweep(now: number, remove: (id: string) => Promise<void>): Promise<number>;
}

/** `database`: the media store's MongoDB database (its name scopes the keys). */
export function createUploadClaims(redis: RedisClient, options: { unclaimedTtlMs: number; database: string }): UploadClaims {
  const tag = `${KEY_PREFIX}:{media-uploads:${options.database}}`;
  const UNCLAIMED = `${tag}:unclaimed`;
  const ownerKey = (owner: string) => `${tag}:owner:${owner}`;
  const claimKey = (id: string) => `${tag}:claim:${id}`;
  // The owner's hash outlives its newest entry's TTL (and the sweep's pass) by a margin.
  const ownerTtlMs = options.unclaimedTtlMs + 10 * 60_000;
  return {
    async reserve(owner, id, bytes, limits) {
      const result = (await reserveScript(
        redis,
        [ownerKey(owner), UNCLAIMED],
        [id, bytes, limits.maxCount, limits.maxBytes, Date.now() + options.unclaimedTtlMs, ownerTtlMs, `${id} ${owner}`],
      )) as number[];
      const [status = 0, first = 0, second = 0] = result.map(Number);
      if (status === 1) return { ok: true, grantedBytes: first };
      return { ok: false, reason: status === 0 ? 'count' : 'bytes', count: first, bytes: second };
    },
    async stored(owner, id, bytes) {
      await settleScript(redis, [ownerKey(owner)], [id, Math.max(1, bytes)]);
    },
    async release(owner, id) {
      await settleScript(redis, [ownerKey(owner)], [id, 0]);
    },
    async claim(owner, ids, messageId) {
      const unique = [...new Set(ids)];
      if (unique.length === 0) return { ok: true };
      const refused = (await claimScript(
        redis,
        [UNCLAIMED, ownerKey(owner), ...unique.map(claimKey)],
        [messageId, owner, CLAIM_TTL_SECONDS, ...unique],
      )) as string;
      return refused ? { ok: false, id: refused } : { ok: true };
    },
    async sweep(now, remove) {
      let removed = 0;
      for (;;) {
        const members = await redis.zrangebyscore(UNCLAIMED, '-inf', now, 'LIMIT', 0, SWEEP_BATCH);
        for (const member of members) {
          const space = member.indexOf(' ');
          const id = member.slice(0, space);
          const owner = member.slice(space + 1);
          const mine = Number(await expireScript(redis, [UNCLAIMED, ownerKey(owner), claimKey(id)], [member, id, CLAIM_TTL_SECONDS]));
          if (mine === 1) {
            await remove(id);
            removed += 1;
          }
          await redis.zrem(UNCLAIMED, member);
        }
        if (members.length < SWEEP_BATCH) return removed;
      }
    },
  };
}
