/**
 * The quiet checks of the satisfaction question: after an answered turn the conversation's reply
 * time goes into one Redis sorted set (`asst:{csat}:quiet`, member the conversation, score the
 * reply's time: one ZADD, and a later one simply moves it), and each worker looks every few
 * seconds for conversations whose score is CSAT_AFTER_MINUTES old, takes them out of the set (one
 * script: a conversation is checked by one worker) and asks only if nothing happened since
 * (`csat.ts` decides: a conversation whose history was written since is queued again for then,
 * so a process that queued a check skips the replies before it), 16 at a time. A check is best
 * effort: one that fails is not retried.
 */
import type { Logger } from '../logger.js';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

/** The conversations waiting for their quiet check (members are conversation keys: an erasure removes a person's). */
export const QUIET_KEY = `${KEY_PREFIX}:{csat}:quiet`;
/** Quiet checks a worker runs at once. */
const CHECKS = 16;
/** How often a worker looks, at most (a shorter quiet period looks more often). */
const MAX_LOOK_MS = 5_000;

// KEYS[1] the set; ARGV: the newest reply time that is quiet now, how many. Returns {member, score, …}, removed.
const takeScript = luaScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #due, 2 do redis.call('ZREM', KEYS[1], due[i]) end
return due`);

export function createCsatQueue(options: { redis: RedisClient }) {
  return {
    /** The conversation's quiet check, CSAT_AFTER_MINUTES after `at` (a later one replaces it). */
    async scheduleQuiet(conversationKey: string, at: number): Promise<void> {
      await options.redis.zadd(QUIET_KEY, at, conversationKey);
    },
  };
}

/**
 * Runs the quiet checks whose time came, in this process, until `close`: at most CHECKS at once,
 * each on its own (a slow one never holds the others back); a look takes only as many as there is
 * room for, and a finished check looks again at once.
 */
export function createCsatWorker(options: {
  redis: RedisClient;
  afterMs: number;
  quiet(conversationKey: string, at: number): Promise<unknown>;
  logger: Logger;
  now?: () => number;
}): { close(): Promise<void> } {
  const now = options.now ?? Date.now;
  const checks = new Set<Promise<void>>();
  let looking: Promise<void> | undefined;
  let closed = false;
  const check = (conversationKey: string, at: number) => {
    const running: Promise<void> = options
      .quiet(conversationKey, at)
      .then(
        () => undefined,
        (error: unknown) => options.logger.warn('csat-quiet-failed', { conversationKey, error }),
      )
      .finally(() => {
        checks.delete(running);
        look();
      });
    checks.add(running);
  };
  const take = async () => {
    const room = CHECKS - checks.size;
    if (room <= 0 || closed) return;
    const due = (await takeScript(options.redis, [QUIET_KEY], [now() - options.afterMs, room])) as string[];
    for (let index = 0; index + 1 < due.length; index += 2) check(due[index] ?? '', Number(due[index + 1]));
  };
  const look = () => {
    if (looking || closed) return;
    looking = take()
      .catch((error: unknown) => options.logger.warn('csat-quiet-failed', { error }))
      .finally(() => (looking = undefined));
  };
  const timer = setInterval(look, Math.max(100, Math.min(MAX_LOOK_MS, options.afterMs / 4)));
  timer.unref();
  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await looking;
      await Promise.all(checks);
    },
  };
}
