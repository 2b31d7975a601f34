/**
 * The knowledge misses still in the usage store's pending entries (`usage-store.ts`: a turn's
 * entry carries its miss's line until a fold lists it), for the readers of a person's data: the
 * export lists them with the unanswered questions, the erasure drops a person's line from its
 * entry (in one script, so a fold takes the entry whole, before or after) and leaves the rest —
 * the model use, and the miss the reports count — as it was.
 */
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

/** A pending usage list, whichever MongoDB database it is for (`asst:{usage:<database>}:pending`). */
export const PENDING_USAGE_KEY = new RegExp(`^${KEY_PREFIX}:\\{usage:[^}]*\\}:pending$`);

/** The miss line (`q`) an entry carries, if any. */
function noteOf(entry: string): string | undefined {
  try {
    const { q } = JSON.parse(entry) as { q?: unknown };
    return typeof q === 'string' ? q : undefined;
  } catch {
    return undefined;
  }
}

/** The misses' lines the entries pending in `key` carry. */
export async function pendingMissNotes(redis: RedisClient, key: string): Promise<string[]> {
  return (await redis.lrange(key, 0, -1)).flatMap((entry) => noteOf(entry) ?? []);
}

/** KEYS[1] a pending list; ARGV pairs (entry, the same without its miss line): each entry still there is replaced in place. Returns how many. */
const replaceScript = luaScript(`
local replaced = 0
for index, raw in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  for pair = 1, #ARGV, 2 do
    if raw == ARGV[pair] then
      redis.call('LSET', KEYS[1], index - 1, ARGV[pair + 1])
      replaced = replaced + 1
      break
    end
  end
end
return replaced`);

/** Drops the miss line from each pending entry of `key` whose line `personal` holds; how many. */
export async function erasePendingMissNotes(redis: RedisClient, key: string, personal: (note: string) => boolean): Promise<number> {
  const pairs: string[] = [];
  for (const entry of new Set(await redis.lrange(key, 0, -1))) {
    const note = noteOf(entry);
    if (note === undefined || !personal(note)) continue;
    const { q: _dropped, ...rest } = JSON.parse(entry) as Record<string, unknown>;
    pairs.push(entry, JSON.stringify(rest));
  }
  return pairs.length === 0 ? 0 : Number(await replaceScript(redis, [key], pairs));
}
