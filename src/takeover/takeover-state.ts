/**
 * The hot path's view of a takeover, in Redis: which conversation a person holds (mirrored
 * here after the MongoDB transition won — MongoDB stays the record), when its customer last
 * wrote (WhatsApp's 24-hour window: a field of the conversation's transcript hash, stamped where
 * its history is written), which conversation a teammate's number holds, and a pub/sub channel
 * of the conversation's new messages. A customer batch costs one command (HGETALL of the
 * takeover hash, whose `watchedUntil` field says until when a live page watches); it never reads
 * MongoDB to learn a conversation is taken. Nobody watching (nearly always), the message and its
 * reply are published to nobody: not at all (a page opened meanwhile reads them back from the
 * stored transcript, and an open page reads it again every 15 s).
 * Keys of one conversation share its `{conversationKey}` hash tag; a teammate's key is their own.
 *
 * The watched mark lives in the takeover hash, so the transitions that rewrite or delete the
 * mirror keep it: setting a takeover carries it over, clearing one leaves it alone in the hash
 * for at most WATCHED_TTL_SECONDS. A hash holding only the mark (no takeover) expires with it.
 * The previous release kept the mark in a key of its own (`takeoverKeys.watched`): a page still
 * sets that key too, so a worker of that release, during a deploy, publishes to pages of this one.
 * This release does not read it: a page open on a web process of the previous release, while
 * workers of this one answer, shows their messages at its next 15-second re-read of the transcript.
 *
 * A takeover that ended (handed back or closed) stays mirrored, marked `endedAt`, until the worker
 * reaches its end entry in the inbox: customer messages queued ahead of that entry came while the
 * person held the conversation and are relayed to them (`onCustomerMessages` still returns it),
 * while everything else (`get`: the idle check, a new takeover, the admin API) sees it ended.
 */
import { LRUCache } from 'lru-cache';
import type { RedisClient } from '../redis.js';
import { z } from 'zod';
import { KEY_PREFIX, luaScript } from '../redis.js';
import { CUSTOMER_AT_FIELD, transcriptKeys } from '../store/transcript-keys.js';
import type { TeamId } from '../handoff/teams.js';

export const takeoverKeys = {
  takeover: (conversationKey: string) => `${KEY_PREFIX}:takeover:{${conversationKey}}`,
  /** When the customer last wrote, as releases before the transcript hash's `customerAt` stamped it: read until these expire (8 days). */
  window: (conversationKey: string) => `${KEY_PREFIX}:window:{${conversationKey}}`,
  events: (conversationKey: string) => `${KEY_PREFIX}:takeover-events:{${conversationKey}}`,
  /** Before a teammate could hold several conversations: one `<conversation>|<hand-off>` string (read until it expires). */
  holding: (teammateId: string) => `${KEY_PREFIX}:holding:{${teammateId}}`,
  /** Every conversation a teammate holds, as a set of `<conversation>|<hand-off>`. */
  holdings: (teammateId: string) => `${KEY_PREFIX}:holdings:{${teammateId}}`,
  /**
   * The previous release's watched mark (set while a live page subscribes, refreshed before it
   * expires): still set beside the takeover hash's `watchedUntil`, for that release's workers during a deploy; never read.
   */
  watched: (conversationKey: string) => `${KEY_PREFIX}:takeover-watched:{${conversationKey}}`,
};

/** How long a live page's subscription counts as watching without a refresh. */
export const WATCHED_TTL_SECONDS = 60;
/** The takeover hash's field saying until when (ms since the epoch) a live page watches the conversation. */
const WATCHED_FIELD = 'watchedUntil';
/** Conversations whose last known watched state a process remembers (the oldest forgotten first). */
const WATCHED_MEMORY = 10_000;

/** A takeover mirror outlives any idle timeout; hand-back deletes it. */
const TAKEOVER_TTL_SECONDS = 30 * 24 * 60 * 60;
/**
 * An ended takeover's mirror lasts at most this long: normally the worker clears it at once;
 * should its end entry never be queued (a crash right after marking), the conversation goes back
 * to the assistant after this anyway.
 */
const ENDED_TTL_SECONDS = 60 * 60;

const TakeoverStateSchema = z.object({
  handoffId: z.string().min(1),
  conversationId: z.string().min(1),
  channel: z.string().min(1),
  team: z.enum(['sales', 'support']),
  holderId: z.string().min(1),
  holderName: z.string().min(1),
  holderVia: z.enum(['whatsapp', 'page', 'admin', 'system']),
  holderWhatsapp: z.string().optional(),
  takenAt: z.coerce.number().int(),
  /** The holder's last message to the customer (the idle clock), ms. */
  lastTeammateAt: z.coerce.number().int(),
  /** Ended (handed back or closed), ms; mirrored until the worker reaches the end's inbox entry. */
  endedAt: z.coerce.number().int().optional(),
});
/** A conversation held by a person, as the hot path sees it. */
export type TakeoverState = z.infer<typeof TakeoverStateSchema> & { team: TeamId };

export interface TakeoverStateStore {
  /**
   * The conversation's takeover, also one ended whose end entry is still queued, read once for a
   * batch of customer messages; tells a live page watching it (`events`, one per message), none: nobody.
   */
  onCustomerMessages(conversationKey: string, events: readonly unknown[]): Promise<TakeoverState | undefined>;
  /** False when this process's last customer message of the conversation found no live page watching. */
  watched(conversationKey: string): boolean;
  /** Marks conversations a live page subscribes to as watched (for WATCHED_TTL_SECONDS). */
  watch(conversationKeys: readonly string[]): Promise<void>;
  /** The conversation's takeover, undefined when none or ended. */
  get(conversationKey: string): Promise<TakeoverState | undefined>;
  set(state: TakeoverState): Promise<void>;
  /** Marks the mirror ended if it is still this hand-off's (the worker clears it at its end entry); the holder holds nothing now. */
  end(conversationKey: string, handoffId: string, holderId: string, at: number): Promise<void>;
  /** Removes the mirror if it is still this hand-off's (and the holder's key, given the holder). */
  clear(conversationKey: string, handoffId: string, holderId?: string): Promise<void>;
  touch(conversationKey: string, at: number): Promise<void>;
  /** When the customer last wrote, ms; undefined when not within the key's lifetime. */
  lastCustomerMessageAt(conversationKey: string): Promise<number | undefined>;
  /** The hand-offs a teammate (by id) holds, in no particular order (none: an empty list). */
  holding(teammateId: string): Promise<string[]>;
  publish(conversationKey: string, event: unknown): Promise<void>;
}

function parse(raw: Record<string, string> | null | undefined): TakeoverState | undefined {
  if (!raw || Object.keys(raw).length === 0) return undefined;
  const parsed = TakeoverStateSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

// KEYS: takeover. ARGV: hand-off id, watched ttl (s). Deletes the mirror only if it is still that
// hand-off's; a live page's watched mark stays, alone in the hash, for at most the mark's lifetime.
const clearTakeoverScript = luaScript(`
if redis.call('HGET', KEYS[1], 'handoffId') ~= ARGV[1] then return 0 end
local watched = redis.call('HGET', KEYS[1], '${WATCHED_FIELD}')
redis.call('DEL', KEYS[1])
if watched then
  redis.call('HSET', KEYS[1], '${WATCHED_FIELD}', watched)
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1`);

// KEYS: takeover. ARGV: ttl (s), then the state's fields and values. Replaces the mirror, keeping a live page's watched mark.
const setTakeoverScript = luaScript(`
local watched = redis.call('HGET', KEYS[1], '${WATCHED_FIELD}')
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
if watched then redis.call('HSET', KEYS[1], '${WATCHED_FIELD}', watched) end
return redis.call('EXPIRE', KEYS[1], ARGV[1])`);

// KEYS: takeover, the previous release's watched key. ARGV: watched until (ms), ttl (s). Marks the
// conversation watched; a hash with no takeover in it lives as long as the mark (a takeover's keeps its own TTL).
const watchScript = luaScript(`
redis.call('HSET', KEYS[1], '${WATCHED_FIELD}', ARGV[1])
if redis.call('HEXISTS', KEYS[1], 'handoffId') == 0 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
redis.call('SET', KEYS[2], '1', 'EX', ARGV[2])
return 1`);

// KEYS: takeover. ARGV: hand-off id, time, ttl (s). Marks the mirror ended only if it is still that hand-off's.
const endTakeoverScript = luaScript(`
if redis.call('HGET', KEYS[1], 'handoffId') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'endedAt', ARGV[2])
return redis.call('EXPIRE', KEYS[1], ARGV[3])`);

// KEYS: holdings, holding (both the teammate's slot). ARGV: the held value. (Another slot than the conversation's: a script of its own.)
const clearHoldingScript = luaScript(`
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then return redis.call('DEL', KEYS[2]) end
return 0`);

// KEYS: takeover. ARGV: time. Moves the idle clock of a takeover that still exists (not a hash holding only a watched mark).
const touchScript = luaScript(`
if redis.call('HEXISTS', KEYS[1], 'handoffId') == 1 then return redis.call('HSET', KEYS[1], 'lastTeammateAt', ARGV[1]) end
return 0`);

export function createTakeoverStateStore(redis: RedisClient): TakeoverStateStore {
  const watchedNow = new LRUCache<string, boolean>({ max: WATCHED_MEMORY });
  return {
    async onCustomerMessages(conversationKey, events) {
      // One command: the takeover and whether a live page watches are fields of one hash.
      const read = await redis.hgetall(takeoverKeys.takeover(conversationKey));
      const watched = Number(read[WATCHED_FIELD]) > Date.now();
      watchedNow.set(conversationKey, watched);
      // Best effort, as every publication: a page that missed it reads the stored transcript again.
      for (const event of watched ? events : []) await redis.publish(takeoverKeys.events(conversationKey), JSON.stringify(event)).catch(() => undefined);
      return parse(read);
    },

    watched(conversationKey) {
      return watchedNow.get(conversationKey) ?? true;
    },

    async watch(conversationKeys) {
      // One script each (their keys are in different slots of a cluster), sent together.
      const until = Date.now() + WATCHED_TTL_SECONDS * 1000;
      await Promise.all(
        conversationKeys.map((key) => watchScript(redis, [takeoverKeys.takeover(key), takeoverKeys.watched(key)], [until, WATCHED_TTL_SECONDS])),
      );
    },

    async get(conversationKey) {
      const state = parse(await redis.hgetall(takeoverKeys.takeover(conversationKey)));
      return state?.endedAt === undefined ? state : undefined;
    },

    async set(state) {
      const fields = Object.entries(state).flatMap(([name, value]) => (value === undefined ? [] : [name, String(value)]));
      await setTakeoverScript(redis, [takeoverKeys.takeover(state.conversationId)], [TAKEOVER_TTL_SECONDS, ...fields]);
      // A set: a teammate may hold several conversations (their plain text then asks which one).
      const holdings = takeoverKeys.holdings(state.holderId);
      await redis.multi().sadd(holdings, `${state.conversationId}|${state.handoffId}`).expire(holdings, TAKEOVER_TTL_SECONDS).exec();
    },

    async end(conversationKey, handoffId, holderId, at) {
      await endTakeoverScript(redis, [takeoverKeys.takeover(conversationKey)], [handoffId, at, ENDED_TTL_SECONDS]);
      await clearHoldingScript(redis, [takeoverKeys.holdings(holderId), takeoverKeys.holding(holderId)], [`${conversationKey}|${handoffId}`]);
    },

    async clear(conversationKey, handoffId, holderId) {
      await clearTakeoverScript(redis, [takeoverKeys.takeover(conversationKey)], [handoffId, WATCHED_TTL_SECONDS]);
      if (holderId !== undefined) {
        await clearHoldingScript(redis, [takeoverKeys.holdings(holderId), takeoverKeys.holding(holderId)], [`${conversationKey}|${handoffId}`]);
      }
    },

    async touch(conversationKey, at) {
      await touchScript(redis, [takeoverKeys.takeover(conversationKey)], [at]);
    },

    async lastCustomerMessageAt(conversationKey) {
      const results = await redis
        .pipeline()
        .hget(transcriptKeys.conversation(conversationKey), CUSTOMER_AT_FIELD)
        .get(takeoverKeys.window(conversationKey))
        .exec();
      const stamps = (results ?? []).map(([error, raw]) => {
        if (error) throw error;
        return typeof raw === 'string' ? Number(raw) : Number.NaN;
      });
      const at = Math.max(...stamps.filter((stamp) => Number.isFinite(stamp)));
      return Number.isFinite(at) ? at : undefined;
    },

    async holding(teammateId) {
      const results = await redis.pipeline().smembers(takeoverKeys.holdings(teammateId)).get(takeoverKeys.holding(teammateId)).exec();
      const [members, legacy] = results ?? [];
      if (members?.[0]) throw members[0];
      const values = [...((members?.[1] as string[] | undefined) ?? []), ...(typeof legacy?.[1] === 'string' ? [legacy[1]] : [])];
      return [...new Set(values.map((value) => value.split('|')[1] ?? '').filter((handoffId) => handoffId !== ''))];
    },

    async publish(conversationKey, event) {
      await redis.publish(takeoverKeys.events(conversationKey), JSON.stringify(event));
    },
  };
}
