/**
 * A lease in Redis: one key whose value is its holder's token, set with a TTL (`SET … PX … NX`
 * by its owner). Renewing and releasing go by the token, in one script each, so a holder whose
 * lease expired and was taken by another never extends or frees the new holder's. Shared by every
 * token-checked lock: the conversation lock, the suspect turn, the recent-history copy, a
 * source's crawl.
 */
import { luaScript, type RedisClient } from './redis.js';

// KEYS: the lease. ARGV: token, TTL (ms). Extends it if the token holds it: 1 if it did.
const renewScript = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`);

// KEYS: the lease. ARGV: token. Deletes it if the token holds it: 1 if it did.
const releaseScript = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);

/** Extends the lease `key` to `ttlMs` from now if `token` holds it; false when it does not (any more). */
export async function renewLease(redis: RedisClient, key: string, token: string, ttlMs: number): Promise<boolean> {
  return Number(await renewScript(redis, [key], [token, ttlMs])) === 1;
}

/** Frees the lease `key` if `token` holds it; false when it did not (expired, or another's). */
export async function releaseLease(redis: RedisClient, key: string, token: string): Promise<boolean> {
  return Number(await releaseScript(redis, [key], [token])) === 1;
}
