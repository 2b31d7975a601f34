/**
 * A conversation's facts per role in Redis, and the active-role pointer. Facts are written by
 * `remember()` with compare-and-set: a write names the version it read and only lands if no
 * other turn wrote since; on a conflict it re-reads, merges and tries again (bounded), which
 * is the only way a turn spends more than its Redis budget. Everything carries a TTL.
 */
import type { RedisClient } from '../../redis.js';
import { z } from 'zod';
import type { Facts } from '../../contracts/index.js';
import { stateKeys, STATE_TTL_SECONDS } from './keys.js';

const FactValueSchema = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const StoredFactsSchema = z.object({ v: z.number().int().nonnegative(), f: z.record(z.string(), FactValueSchema) });

export interface VersionedFacts {
  version: number;
  facts: Facts;
}

export const EMPTY_FACTS: VersionedFacts = Object.freeze({ version: 0, facts: Object.freeze({}) as Facts });

// KEYS[1] facts key. ARGV: expected version, new JSON (already carrying version+1), ttl seconds.
// Returns 1 when written, 0 when another writer got there first.
const compareAndSetScript = `
local current = redis.call('GET', KEYS[1])
local version = 0
if current then version = cjson.decode(current).v end
if version ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1`;

const MAX_CAS_ATTEMPTS = 3;

/** A role's stored facts (EMPTY_FACTS when missing or unreadable); also what the turn-start MGET reads. */
export function parseFacts(raw: string | null): VersionedFacts {
  if (raw === null) return EMPTY_FACTS;
  try {
    const parsed = StoredFactsSchema.safeParse(JSON.parse(raw));
    return parsed.success ? { version: parsed.data.v, facts: parsed.data.f } : EMPTY_FACTS;
  } catch {
    return EMPTY_FACTS;
  }
}

function sameFacts(before: Facts, after: Facts): boolean {
  return Object.entries(after).every(([key, value]) => before[key] === value);
}

export interface FactStore {
  read(conversationKey: string, roleId: string): Promise<VersionedFacts>;
  /**
   * Merges `learned` into the role's facts. Pass what this turn already read to skip the GET;
   * returns the facts as stored (unchanged, without a write, when nothing new was learned).
   */
  remember(conversationKey: string, roleId: string, learned: Facts, known?: VersionedFacts): Promise<VersionedFacts>;
  writeActiveRole(conversationKey: string, roleId: string): Promise<void>;
}

export function createFactStore(redis: RedisClient): FactStore {
  const read = async (conversationKey: string, roleId: string) => parseFacts(await redis.get(stateKeys.facts(conversationKey, roleId)));

  return {
    read,

    async remember(conversationKey, roleId, learned, known) {
      let current = known ?? (await read(conversationKey, roleId));
      for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt += 1) {
        if (sameFacts(current.facts, learned)) return current;
        const next: VersionedFacts = { version: current.version + 1, facts: { ...current.facts, ...learned } };
        const written = await redis.eval(
          compareAndSetScript,
          1,
          stateKeys.facts(conversationKey, roleId),
          current.version,
          JSON.stringify({ v: next.version, f: next.facts }),
          STATE_TTL_SECONDS,
        );
        if (written === 1) return next;
        current = await read(conversationKey, roleId);
      }
      throw new Error(`remember(${roleId}) lost ${MAX_CAS_ATTEMPTS} compare-and-set races`);
    },

    async writeActiveRole(conversationKey, roleId) {
      await redis.set(stateKeys.activeRole(conversationKey), roleId, 'EX', STATE_TTL_SECONDS);
    },
  };
}
