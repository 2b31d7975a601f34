/**
 * The hot path's view of a takeover, in Redis: which conversation a person holds (mirrored
 * here after the MongoDB transition won — MongoDB stays the record), when its customer last
 * wrote (WhatsApp's 24-hour window: a field of the conversation's transcript hash, stamped where
 * its history is written), which conversation a teammate's number holds, and a pub/sub channel
 * of the conversation's new messages. A customer message costs one round trip (read the
 * takeover and whether a live page watches); it never reads MongoDB to learn a conversation is
 * taken. Nobody watching (nearly always), the message and its reply are published to nobody:
 * not at all (a page opened meanwhile reads them back from the stored transcript).
 * Keys of one conversation share its `{conversationKey}` hash tag; a teammate's key is their own.
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
  /** Set while a live page subscribes to the conversation's events (refreshed before it expires). */
  watched: (conversationKey: string) => `${KEY_PREFIX}:takeover-watched:{${conversationKey}}`,
};

/** How long a live page's subscription counts as watching without a refresh. */
export const WATCHED_TTL_SECONDS = 60;
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

// KEYS: takeover. ARGV: hand-off id. Deletes the mirror only if it is still that hand-off's.
const clearTakeoverScript = luaScript(`
if redis.call('HGET', KEYS[1], 'handoffId') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);

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

// KEYS: takeover. ARGV: time. Moves the idle clock of a takeover that still exists.
const touchScript = luaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HSET', KEYS[1], 'lastTeammateAt', ARGV[1]) end
return 0`);

export function createTakeoverStateStore(redis: RedisClient): TakeoverStateStore {
  const watchedNow = new LRUCache<string, boolean>({ max: WATCHED_MEMORY });
  return {
    async onCustomerMessages(conversationKey, events) {
      const results = await redis.pipeline().hgetall(takeoverKeys.takeover(conversationKey)).exists(takeoverKeys.watched(conversationKey)).exec();
      const [read, watching] = results ?? [];
      if (read?.[0]) throw read[0];
      // Unknown (the read failed): watched, so nothing is left unpublished.
      const watched = watching?.[0] ? true : watching?.[1] === 1;
      watchedNow.set(conversationKey, watched);
      // Best effort, as every publication: a page that missed it reads the stored transcript again.
      for (const event of watched ? events : []) await redis.publish(takeoverKeys.events(conversationKey), JSON.stringify(event)).catch(() => undefined);
      return parse(read?.[1] as Record<string, string> | undefined);
    },

    watched(conversationKey) {
      return watchedNow.get(conversationKey) ?? true;
    },

    async watch(conversationKeys) {
      // One command each (their keys are in different slots of a cluster), sent together.
      await Promise.all(conversationKeys.map((key) => redis.set(takeoverKeys.watched(key), '1', 'EX', WATCHED_TTL_SECONDS)));
    },

    async get(conversationKey) {
      const state = parse(await redis.hgetall(takeoverKeys.takeover(conversationKey)));
      return state?.endedAt === undefined ? state : undefined;
    },

    async set(state) {
      const key = takeoverKeys.takeover(state.conversationId);
      const fields = Object.fromEntries(
        Object.entries(state)
          .filter(([, value]) => value !== undefined)
          .map(([name, value]) => [name, String(value)]),
      );
      await redis.multi().del(key).hset(key, fields).expire(key, TAKEOVER_TTL_SECONDS).exec();
      // A set: a teammate may hold several conversations (their plain text then asks which one).
      const holdings = takeoverKeys.holdings(state.holderId);
      await redis.multi().sadd(holdings, `${state.conversationId}|${state.handoffId}`).expire(holdings, TAKEOVER_TTL_SECONDS).exec();
    },

    async end(conversationKey, handoffId, holderId, at) {
      await endTakeoverScript(redis, [takeoverKeys.takeover(conversationKey)], [handoffId, at, ENDED_TTL_SECONDS]);
      await clearHoldingScript(redis, [takeoverKeys.holdings(holderId), takeoverKeys.holding(holderId)], [`${conversationKey}|${handoffId}`]);
    },

    async clear(conversationKey, handoffId, holderId) {
      await clearTakeoverScript(redis, [takeoverKeys.takeover(conversationKey)], [handoffId]);
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
