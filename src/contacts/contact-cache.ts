/**
 * The contact store behind a Redis read-through cache, so a turn's caller lookup (a channel's
 * `identify`: a contact by number, a website user by external id or email) makes no MongoDB
 * round trip while the cache is warm, and still answers while MongoDB is down. Keys share the
 * address's (or alias's) hash tag: `asst:contact:{<address>}`, `asst:contact-alias:{<alias>}`,
 * each with an `:epoch` beside it.
 *   - A hit costs one MGET (entry + epoch). An entry (a contact or "none") is fresh for
 *     CONTACT_CACHE_TTL_SECONDS; then MongoDB is read again. A contact is kept 7 days, so while
 *     MongoDB is unreachable (or slower than LOOKUP_TIMEOUT_MS) a stale entry still answers;
 *     "none" lives only while fresh (a miss answers the same), so unknown numbers cost little.
 *   - Never a wrong caller: every contact write through this store (the admin API's upsert,
 *     import and removal) bumps the epoch and deletes the entries of the contact and of the
 *     aliases it declares, after MongoDB took the write; a reader fills an entry only if the
 *     epoch it saw before reading MongoDB is unchanged (one Lua script), so a read that raced a
 *     write cannot put the old value back. An alias entry is only an index: the contact it names
 *     must still declare the alias (checked on the cached contact, which its own write refreshed).
 *   - A miss while MongoDB is unreachable answers "not linked" (anonymous: public data only,
 *     `contact_lookup_failed_total`, `contact-lookup-failed`): a linked customer is briefly
 *     treated as unknown, never as someone else.
 * A Redis failure falls through to MongoDB (no fill). Operator reads and writes pass through.
 */
import type { RedisClient } from '../redis.js';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX } from '../redis.js';
import { aliasesOf, ContactSchema, emailAlias, externalAlias, type Contact, type ContactStore } from './contact-store.js';

/** How long an entry is kept as a fallback for a MongoDB outage (its freshness is the configured TTL). */
const KEEP_MS = 7 * 24 * 60 * 60 * 1000;
/** A MongoDB read slower than this is treated as failed: the turn goes on without waiting. */
const LOOKUP_TIMEOUT_MS = 1500;

const contactKey = (address: string) => `${KEY_PREFIX}:contact:{${address}}`;
const aliasKey = (alias: string) => `${KEY_PREFIX}:contact-alias:{${alias}}`;
const epochOf = (key: string) => `${key}:epoch`;

const ContactEntrySchema = z.object({ value: ContactSchema.nullable(), at: z.number() });
const AliasEntrySchema = z.object({ value: z.string().nullable(), at: z.number() });

/** Sets KEYS[1] only if KEYS[2] (the epoch) still holds ARGV[1] ('' = absent). */
const FILL_SCRIPT = `
local epoch = redis.call('GET', KEYS[2]) or ''
if epoch ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

/** Bumps the epoch KEYS[2] (kept as long as an entry) and deletes the entry KEYS[1]. */
const INVALIDATE_SCRIPT = `
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
return 1`;

class LookupTimeoutError extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LookupTimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface ContactCacheOptions {
  redis: RedisClient;
  ttlSeconds: number;
  logger: Logger;
  metrics: Metrics;
}

export function createCachedContactStore(store: ContactStore, options: ContactCacheOptions): ContactStore {
  const { redis, logger, metrics } = options;
  const ttlMs = options.ttlSeconds * 1000;

  /** The cached value of `key`, read through to `load` when absent or stale; undefined also when nothing answers. */
  const readThrough = async <T>(key: string, schema: z.ZodType<{ value: T | null; at: number }>, load: () => Promise<T | null>): Promise<T | null> => {
    let entry: { value: T | null; at: number } | undefined;
    let epoch: string | undefined;
    try {
      const [raw, seen] = await redis.mget(key, epochOf(key));
      epoch = seen ?? '';
      const parsed = raw === null || raw === undefined ? undefined : schema.safeParse(JSON.parse(raw));
      entry = parsed?.success ? parsed.data : undefined;
    } catch (error) {
      logger.warn('contact-cache-read-failed', { error });
    }
    if (entry && Date.now() - entry.at < ttlMs) return entry.value;
    let value: T | null;
    try {
      value = await withTimeout(load(), LOOKUP_TIMEOUT_MS);
    } catch (error) {
      metrics.increment('contact_lookup_failed_total', { answered: entry ? 'stale' : 'anonymous' });
      logger.warn('contact-lookup-failed', { answered: entry ? 'stale' : 'anonymous', error });
      return entry ? entry.value : null;
    }
    if (epoch !== undefined) {
      await redis
        // "None" needs no outage fallback (a miss answers the same): it lives only while fresh.
        .eval(FILL_SCRIPT, 2, key, epochOf(key), epoch, JSON.stringify({ value, at: Date.now() }), value === null ? ttlMs : KEEP_MS)
        .catch((error: unknown) => logger.warn('contact-cache-fill-failed', { error }));
    }
    return value;
  };

  const get = async (address: string): Promise<Contact | undefined> =>
    (await readThrough(contactKey(address), ContactEntrySchema, async () => (await store.get(address)) ?? null)) ?? undefined;

  /** The contact an alias names, if that contact (as cached) still declares it. */
  const byAlias = async (alias: string): Promise<Contact | undefined> => {
    const address = await readThrough(aliasKey(alias), AliasEntrySchema, async () => (await store.findByAlias(alias))?.address ?? null);
    if (address === null) return undefined;
    const contact = await get(address);
    return contact && aliasesOf(contact).has(alias) ? contact : undefined;
  };

  /** After a write: the contact's entry and those of the aliases it declares go, with their epochs bumped. */
  const invalidate = async (contacts: readonly Pick<Contact, 'address' | 'email' | 'externalId'>[]) => {
    const keys = new Set<string>();
    for (const contact of contacts) {
      keys.add(contactKey(contact.address));
      for (const alias of aliasesOf(contact).keys()) keys.add(aliasKey(alias));
    }
    await Promise.all([...keys].map((key) => redis.eval(INVALIDATE_SCRIPT, 2, key, epochOf(key), KEEP_MS)));
  };

  /** Runs a write, then invalidates — also when it failed part-way (an import is not atomic). */
  const writing = async <T>(write: () => Promise<T>, contacts: readonly Pick<Contact, 'address' | 'email' | 'externalId'>[]): Promise<T> => {
    try {
      return await write();
    } finally {
      await invalidate(contacts);
    }
  };

  return {
    ...store,
    get,
    findByAlias: byAlias,
    async findVerifiedUser({ externalId, email }) {
      return (await byAlias(externalAlias(externalId))) ?? (email ? await byAlias(emailAlias(email)) : undefined);
    },
    upsert: (contact) => writing(() => store.upsert(contact), [contact]),
    remove: (address) => writing(() => store.remove(address), [{ address }]),
    importMany: (rows) => writing(() => store.importMany(rows), rows),
  };
}
