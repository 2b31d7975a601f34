/**
 * Sign-in attempts on the reports page, limited per address: at most ATTEMPTS in a WINDOW_MINUTES
 * fixed window (one Redis script per attempt: INCR, then EXPIRE), counted before the token is
 * compared, so a burst of parallel guesses gets no more comparisons than a slow one. A correct
 * token clears the address's count. A refused attempt learns when to try again.
 */
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

const SIGN_IN_ATTEMPTS = 10;
const SIGN_IN_WINDOW_MINUTES = 15;
const WINDOW_MS = SIGN_IN_WINDOW_MINUTES * 60_000;

// KEYS: the window's counter. ARGV: its TTL (s). Returns the count in this window.
const attemptScript = luaScript(`
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return count`);

export type SignInCheck = { allowed: true; clear(): Promise<void> } | { allowed: false; retryAfterSeconds: number };

export async function checkSignIn(redis: RedisClient, address: string, now = Date.now()): Promise<SignInCheck> {
  const key = `${KEY_PREFIX}:reports-sign-in:${address}:${Math.floor(now / WINDOW_MS)}`;
  const count = Number(await attemptScript(redis, [key], [Math.ceil(WINDOW_MS / 1000) + 1]));
  if (count <= SIGN_IN_ATTEMPTS) return { allowed: true, clear: async () => void (await redis.del(key)) };
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((WINDOW_MS - (now % WINDOW_MS)) / 1000)) };
}
