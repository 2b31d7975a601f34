/**
 * Who is talking, answered by Redis alone: the contact store with a Redis index of every linked
 * contact in front of it, so a turn's caller lookup (a channel's `identify`: a contact by number,
 * a website user by external id or email) makes one Redis round trip and never waits on MongoDB.
 * MongoDB stays the durable record; Redis holds the authoritative index of what it says.
 *
 * Keys: `asst:contact-entry:{<keyed hash of the address or alias>}`, one hash per contact address
 * and per alias (`ext:<id>`, `email:<lowercase>`), each with its own hash tag (every script
 * touches one key); the name is an HMAC with the service's secret, so no number, e-mail or user
 * id is in a key name and nobody holding one can recompute it.
 * `value` is the contact as JSON — an alias entry holds a copy of the contact that declares it,
 * so an alias lookup is one `HGET` too; `seq` counts the writes begun on the key and `synced` is
 * the `seq` of the write whose read set `value`. No `value` means "not linked".
 *   - Lookup: `HGET <key> value` (a website user with an email: both aliases at once, in
 *     parallel). Once the index is known complete an absent value is answered "not linked" at
 *     once. A Redis failure, or an incomplete index, falls back to the MongoDB read of before,
 *     bounded by LOOKUP_TIMEOUT_MS; no answer in time → "not linked"
 *     (`contact_lookup_failed_total{answered="anonymous"}`, `contact-lookup-failed`).
 *   - Write-through: every contact write goes through this store (the admin API's upsert, import
 *     and removal): MongoDB first, then, for the contact and every alias it declared before or
 *     declares now, `HINCRBY seq` → s, a read of that key's truth from MongoDB by `_id` (made
 *     after s was taken), and a script that sets (or deletes) `value` only if s > `synced`.
 *     FerretDB 1.x has no atomic conditional update, so a version kept in the document could not
 *     order the writes; this does: the highest s belongs to a read that began after every write
 *     that finished before it, so when racing writers are done Redis holds MongoDB's final value.
 *     A write that fails (or whose process dies) between MongoDB and Redis leaves the index as it
 *     was: the admin API answers an error, and repeating the write (idempotent) re-syncs it.
 *   - Completeness: `asst:contact-entries-complete:{contact-index}`, set by a load that copied every
 *     contact (and its aliases) from MongoDB, at most one process at a time
 *     (`asst:contact-index-loading:{contact-index}`, token-checked; the marker is set only if that
 *     lock survived the load, so a Redis that lost its data mid-load is loaded again). A load
 *     fills a key only if no write ever began on it (no `seq`), so racing loads and writes are
 *     harmless. Each process checks the marker at start-up and every CHECK_INTERVAL_MS (not per
 *     lookup: on a cluster it lives on another slot) and starts a load when it is absent — Redis
 *     restarted without its data, or the first deploy over an existing contacts collection. A
 *     Redis that lost its data is noticed within that interval; meanwhile a linked customer is
 *     answered as not linked (briefly anonymous, never someone else). Gauge
 *     `contact_index_complete` (1/0), logs `contact-index-complete`/`-incomplete`/`-loaded`.
 *   - Never a wrong caller: an entry holds only what MongoDB held for that key after the write
 *     that set it; an alias entry is trusted only if its contact declares the alias. Redis must
 *     not evict (`maxmemory-policy noeviction`, as BullMQ requires): an evicted entry would read as
 *     "not linked" until the contact is written again.
 * Contacts changed in MongoDB directly (not through this store) are not seen: write them through
 * the admin API (an upsert or import of the same rows re-syncs them).
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { createContactConversations, type ContactConversations } from './contact-conversations.js';
import { aliasesOf, ContactSchema, emailAlias, externalAlias, type Contact, type ContactStore } from './contact-store.js';

/** A MongoDB read slower than this (index incomplete, or Redis failing) is treated as failed: the turn goes on. */
const LOOKUP_TIMEOUT_MS = 1500;
/** How often a process re-checks the completeness marker (and loads the index when it is absent). */
const CHECK_INTERVAL_MS = 5000;
/** The load lock's lifetime, renewed after every page; a load that dies frees it within this. */
const LOAD_LOCK_MS = 60_000;
const LOAD_PAGE = 500;
/** Keys (contacts, aliases) synced or loaded at once. */
const PARALLEL = 16;
/** An entry without a value keeps its `seq` this long (it orders writes racing each other). */
const EMPTY_KEEP_MS = 24 * 60 * 60 * 1000;

/** An entry's key: named by a keyed hash of the address or alias (nobody holding a number, an e-mail or a user id can find or recompute it). */
const entryKeyWith = (secret: string) => (name: string) =>
  `${KEY_PREFIX}:contact-entry:{${createHmac('sha256', secret).update(`contact:${name}`).digest('base64url').slice(0, 32)}}`;
const COMPLETE_KEY = `${KEY_PREFIX}:contact-entries-complete:{contact-index}`;
const LOADING_KEY = `${KEY_PREFIX}:contact-index-loading:{contact-index}`;

/** Begins a write on KEYS[1]: the next `seq`; an entry without a value expires in ARGV[1] ms. */
const BEGIN_SCRIPT = `
local sequence = redis.call('HINCRBY', KEYS[1], 'seq', 1)
if redis.call('HEXISTS', KEYS[1], 'value') == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return sequence`;

/** Sets `value` to ARGV[2] ('' = none) if ARGV[1] is newer than `synced`; returns 1 and the value replaced. */
const SYNC_SCRIPT = `
local synced = tonumber(redis.call('HGET', KEYS[1], 'synced') or '0')
if tonumber(ARGV[1]) <= synced then return {0, ''} end
local previous = redis.call('HGET', KEYS[1], 'value') or ''
redis.call('HSET', KEYS[1], 'synced', ARGV[1])
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'value')
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
  redis.call('HSET', KEYS[1], 'value', ARGV[2])
  redis.call('PERSIST', KEYS[1])
end
return {1, previous}`;

/** A load's fill: sets `value` only if no write ever began on KEYS[1]. */
const LOAD_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], 'seq') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[1])
return 1`;

/** The load lock KEYS[1], renewed for ARGV[2] ms or released, only while it holds ARGV[1] (this load's token). */
const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;
/** Sets the marker KEYS[1] and drops the lock KEYS[2], only if the lock still holds ARGV[1]. */
const COMPLETE_SCRIPT = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return 1`;

class LookupTimeoutError extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LookupTimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** `work` for every item, at most PARALLEL at once. */
async function inChunks<T>(items: readonly T[], work: (item: T) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < items.length; start += PARALLEL) await Promise.all(items.slice(start, start + PARALLEL).map(work));
}

function parseContact(raw: string | null | undefined): Contact | undefined {
  if (!raw) return undefined;
  try {
    const parsed = ContactSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** A website-verified user's lookup; `conversationKey`, when given, is noted as one of that user's conversations. */
interface VerifiedLookup {
  externalId: string;
  email?: string | undefined;
  conversationKey?: string | undefined;
}

type Declaring = Pick<Contact, 'address' | 'email' | 'externalId'>;

export interface ContactIndexOptions {
  redis: RedisClient;
  /** The service's secret the per-user conversation sets are named with. */
  secret: string;
  logger: Logger;
  metrics: Metrics;
}

export interface ContactIndex extends ContactStore {
  /** Checks the completeness marker once (a load starts in the background if it is absent), then every few seconds. */
  start(): Promise<void>;
  /** Stops the checks; a load in progress stops after its page (it never waits on a closed process). */
  close(): void;
  /** The widget conversations each verified user was identified in (`contact-conversations.ts`). */
  conversations: ContactConversations;
}

/**
 * Copies every contact and the aliases it holds into the index, then sets the marker (see the
 * header); `onComplete` once it did. One process loads at a time (LOADING_KEY, renewed per page).
 */
async function loadIndex(
  store: ContactStore,
  { redis, logger, entryKey }: Pick<ContactIndexOptions, 'redis' | 'logger'> & { entryKey: (name: string) => string },
  closed: () => boolean,
  onComplete: () => void,
): Promise<void> {
  const token = randomUUID();
  if ((await redis.set(LOADING_KEY, token, 'PX', LOAD_LOCK_MS, 'NX')) !== 'OK') return;
  const startedAt = Date.now();
  let count = 0;
  let after: string | undefined;
  try {
    while (!closed()) {
      const page = await store.list(LOAD_PAGE, after);
      await inChunks(page, async (contact) => {
        const value = JSON.stringify(contact);
        await redis.eval(LOAD_SCRIPT, 1, entryKey(contact.address), value);
        for (const alias of aliasesOf(contact).keys()) {
          // The alias's holder is the contact the alias document names (two could declare it).
          if ((await store.findByAlias(alias))?.address === contact.address) await redis.eval(LOAD_SCRIPT, 1, entryKey(alias), value);
        }
      });
      count += page.length;
      if (Number(await redis.eval(RENEW_SCRIPT, 1, LOADING_KEY, token, LOAD_LOCK_MS)) !== 1) {
        logger.warn('contact-index-load-lost', { contacts: count });
        return;
      }
      const last = page.at(-1);
      if (page.length < LOAD_PAGE || !last) {
        if (Number(await redis.eval(COMPLETE_SCRIPT, 2, COMPLETE_KEY, LOADING_KEY, token, new Date().toISOString())) === 1) {
          logger.info('contact-index-loaded', { contacts: count, ms: Date.now() - startedAt });
          onComplete();
        }
        return;
      }
      after = last.address;
    }
  } catch (error) {
    logger.warn('contact-index-load-failed', { contacts: count, error });
  } finally {
    await redis.eval(RELEASE_SCRIPT, 1, LOADING_KEY, token).catch(() => undefined);
  }
}

export function createContactIndex(store: ContactStore, options: ContactIndexOptions): ContactIndex {
  const { redis, logger, metrics } = options;
  /** Whether the marker was there at the last check (undefined before the first). */
  let complete: boolean | undefined;
  let closed = false;
  let loading: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const conversations = createContactConversations(redis, options.secret, logger);
  const entryKey = entryKeyWith(options.secret);

  /** The contact an index entry holds; undefined when MongoDB must answer instead (index incomplete, Redis failing, entry unreadable). */
  const fromIndex = async (name: string): Promise<{ contact: Contact | undefined } | undefined> => {
    let raw: string | null;
    try {
      raw = await redis.hget(entryKey(name), 'value');
    } catch (error) {
      logger.warn('contact-index-read-failed', { error });
      return undefined;
    }
    if (raw === null) return complete === true ? { contact: undefined } : undefined;
    const contact = parseContact(raw);
    return contact ? { contact } : undefined;
  };

  /** The fallback: MongoDB, bounded; no answer in time is "not linked". */
  const fromStore = async (read: () => Promise<Contact | undefined>): Promise<Contact | undefined> => {
    try {
      return await withTimeout(read(), LOOKUP_TIMEOUT_MS);
    } catch (error) {
      metrics.increment('contact_lookup_failed_total', { answered: 'anonymous' });
      logger.warn('contact-lookup-failed', { answered: 'anonymous', error });
      return undefined;
    }
  };

  const get = async (address: string) => {
    const found = await fromIndex(address);
    return found ? found.contact : fromStore(() => store.get(address));
  };

  const byAlias = async (alias: string) => {
    const found = await fromIndex(alias);
    if (!found) return fromStore(() => store.findByAlias(alias));
    return found.contact && aliasesOf(found.contact).has(alias) ? found.contact : undefined;
  };

  /** Brings one key in line with MongoDB (see the header); the contact it held before, if replaced. */
  const syncKey = async (name: string, read: () => Promise<Contact | undefined>) => {
    const key = entryKey(name);
    const sequence = Number(await redis.eval(BEGIN_SCRIPT, 1, key, EMPTY_KEEP_MS));
    const current = await read();
    const [, previous] = (await redis.eval(SYNC_SCRIPT, 1, key, sequence, current ? JSON.stringify(current) : '', EMPTY_KEEP_MS)) as [number, string];
    return { current, replaced: parseContact(previous) };
  };

  /** After a write: the contact, then every alias it (or an earlier version of it) declares. */
  const syncContact = async (contact: Declaring, before: Contact | undefined) => {
    const { current, replaced } = await syncKey(contact.address, () => store.get(contact.address));
    const aliases = new Set<string>();
    for (const version of [contact, before, current, replaced]) if (version) for (const alias of aliasesOf(version).keys()) aliases.add(alias);
    await inChunks([...aliases], (alias) => syncKey(alias, () => store.findByAlias(alias)));
  };

  /** Runs a write, then syncs what it touched — also when it failed part-way (an import is not atomic). */
  const writing = async <T>(write: () => Promise<T>, contacts: readonly Declaring[]): Promise<T> => {
    const before = new Map<string, Contact | undefined>();
    await inChunks(contacts, async ({ address }) => before.set(address, await store.get(address)));
    try {
      return await write();
    } finally {
      await inChunks(contacts, (contact) => syncContact(contact, before.get(contact.address)));
    }
  };

  /** Logs each change: until it is complete, a lookup of a key not in the index asks MongoDB. */
  const setComplete = (value: boolean) => {
    if (value !== complete) logger.info(value ? 'contact-index-complete' : 'contact-index-incomplete', {});
    complete = value;
    metrics.setGauge('contact_index_complete', value ? 1 : 0);
  };

  const load = () =>
    loadIndex(
      store,
      { ...options, entryKey },
      () => closed,
      () => setComplete(true),
    );

  const check = async () => {
    try {
      setComplete((await redis.exists(COMPLETE_KEY)) === 1);
    } catch (error) {
      logger.warn('contact-index-check-failed', { error });
      return;
    }
    if (!complete && !loading && !closed) {
      loading = load()
        .catch((error: unknown) => logger.warn('contact-index-load-failed', { error }))
        .finally(() => {
          loading = undefined;
        });
    }
  };

  return {
    ...store,
    get,
    findByAlias: byAlias,
    async findVerifiedUser({ externalId, email, conversationKey }: VerifiedLookup) {
      if (conversationKey) void conversations.note({ externalId, email }, conversationKey);
      const [byExternalId, byEmail] = await Promise.all([byAlias(externalAlias(externalId)), email ? byAlias(emailAlias(email)) : undefined]);
      return byExternalId ?? byEmail;
    },
    upsert: (contact) => writing(() => store.upsert(contact), [contact]),
    remove: (address) => writing(() => store.remove(address), [{ address }]),
    importMany: (rows) => writing(() => store.importMany(rows), rows),
    conversations,

    async start() {
      await check();
      timer = setInterval(() => void check(), CHECK_INTERVAL_MS);
      timer.unref();
    },

    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
