/**
 * What the satisfaction question needs to know of a conversation, in one Redis hash per
 * conversation (`asst:csat:{conversationKey}`, so it sits on the conversation's cluster slot):
 * where its customer's last message came from (`seen`: channel, address, metadata — what a
 * question sent outside a turn is addressed by) and when (`inboundAt`), when the assistant last
 * answered and as which role (`replyAt`, `role`), when the service last apologised for a failure
 * (`apologyAt`), when the question was last asked (`askedAt`, the cooldown), the question
 * waiting for an answer (`pending`), the last question rated (`rated`, its ask time: a second tap
 * on it is answered "already noted") and the language the customer writes in (`language`, what a
 * question is asked in when the channel does not say). A customer's batch costs one round trip
 * (`noteInbound`: one pipeline writes `seen` and the language, and reads `pending` and `rated`);
 * the hash's TTL is set when a write creates it and otherwise at most once a day per process.
 */
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { InboundMessage } from '../contracts/index.js';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

const csatKey = (conversationKey: string) => `${KEY_PREFIX}:csat:{${conversationKey}}`;

/**
 * A conversation's CSAT state outlives its quiet period and cooldown, then goes: at least 8 days
 * after its last write (STATE_TTL_MS less TTL_REFRESH_MS, the longest a process goes without
 * setting it again).
 */
const STATE_TTL_MS = 9 * 24 * 60 * 60 * 1000;
/**
 * A process sets a hash's TTL on a customer's message or a reply at most this often (and
 * whenever the write created a field: a new hash), not on every write (a command each).
 */
const TTL_REFRESH_MS = 24 * 60 * 60 * 1000;
/** Conversations whose last TTL refresh a process remembers (the oldest forgotten first: refreshed again). */
const TTL_REFRESH_MEMORY = 50_000;

/** Where the customer's last message came from: enough to address a message to them outside a turn. */
const SeenSchema = z.object({
  channel: z.string().min(1),
  conversationKey: z.string().min(1),
  from: z.object({ address: z.string().min(1), displayName: z.string().optional() }),
  metadata: z.record(z.string(), z.string()),
});
export type Seen = z.infer<typeof SeenSchema>;

/** A question asked and not yet answered (`score`), or rated and open for a comment (`comment`) until `until`. */
const PendingSchema = z.object({
  /** The answer's record id (`csat` collection): `<conversation>|<asked at, ms>`. */
  id: z.string().min(1),
  stage: z.enum(['score', 'comment']),
  until: z.number(),
  language: z.string(),
  askedAt: z.number(),
  channel: z.string(),
  roleId: z.string(),
  withPerson: z.boolean(),
  trigger: z.enum(['handed_back', 'quiet']),
  handoffId: z.string().optional(),
  /** Once rated: the score, how, when (so the comment's write carries them too). */
  score: z.number().int().min(1).max(5).optional(),
  answeredVia: z.enum(['tap', 'typed']).optional(),
  answeredAt: z.number().optional(),
});
export type PendingQuestion = z.infer<typeof PendingSchema>;

export interface CsatConversation {
  seen?: Seen;
  inboundAt?: number;
  replyAt?: number;
  role?: string;
  apologyAt?: number;
  askedAt?: number;
  pending?: PendingQuestion;
  rated?: number;
  language?: string;
}

/** What a customer's batch finds: the question waiting for their answer, the last question they rated, their language, when they were last asked. */
export interface InboundNote {
  pending?: PendingQuestion;
  rated?: number;
  language?: string;
  askedAt?: number;
}

// KEYS[1] the hash; ARGV: now, cooldown ms, pending JSON, ttl ms, quiet since ('' for none). 1: asked (askedAt and
// pending set); 0: within the cooldown; 2: the customer wrote, or the assistant replied, after `quiet since` (checked again where the claim is made).
const CLAIM_ASK = luaScript(`
local asked = tonumber(redis.call('HGET', KEYS[1], 'askedAt') or '')
if asked and tonumber(ARGV[1]) - asked < tonumber(ARGV[2]) then return 0 end
local inbound = tonumber(redis.call('HGET', KEYS[1], 'inboundAt') or '')
if ARGV[5] ~= '' and ((inbound and inbound > tonumber(ARGV[5])) or redis.call('HGET', KEYS[1], 'replyAt') ~= ARGV[5]) then return 2 end
redis.call('HSET', KEYS[1], 'askedAt', ARGV[1], 'pending', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`);

function parsed<T>(schema: z.ZodType<T>, text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  try {
    const result = schema.safeParse(JSON.parse(text));
    return result.success ? result.data : undefined;
  } catch {
    return undefined;
  }
}

const numberOf = (text: string | undefined) => (text === undefined || text === '' ? undefined : Number(text));

export function createCsatState(redis: RedisClient) {
  /** Conversations whose hash's TTL this process set within TTL_REFRESH_MS. */
  const ttlRefreshed = new LRUCache<string, true>({ max: TTL_REFRESH_MEMORY, ttl: TTL_REFRESH_MS });
  // One round trip, no MULTI (two commands, not four): each is idempotent on its own.
  const touch = async (conversationKey: string, fields: Record<string, string>) => {
    await redis.pipeline().hset(csatKey(conversationKey), fields).pexpire(csatKey(conversationKey), STATE_TTL_MS).exec();
  };
  return {
    /** Notes a customer's message (where it came from, when, in which language if known); returns what waits for their answer. */
    async noteInbound(message: InboundMessage, at: number, language?: string): Promise<InboundNote> {
      const seen: Seen = {
        channel: message.channel,
        conversationKey: message.conversationKey,
        from: message.from,
        metadata: Object.fromEntries(Object.entries(message.metadata).filter(([key]) => key !== 'choice')),
      };
      // One round trip, no script: the write, then the read (another client's claim lands before
      // or after both, never between in a way that matters: it checks `inboundAt` itself). The TTL
      // goes with them when this process has not set it today; after, when the write created a
      // field (the hash erased meanwhile, or a language first noted).
      const key = csatKey(message.conversationKey);
      const known = ttlRefreshed.has(message.conversationKey);
      const fields = { seen: JSON.stringify(seen), inboundAt: String(at), ...(language ? { language } : {}) };
      const batch = redis.pipeline().hset(key, fields);
      if (!known) batch.pexpire(key, STATE_TTL_MS);
      const results = (await batch.hmget(key, 'pending', 'rated', 'language', 'askedAt').exec()) ?? [];
      for (const [error] of results) if (error) throw error;
      const [pending, rated, noted, askedAt] = (results.at(-1)?.[1] ?? []) as (string | null)[];
      if (known && Number(results[0]?.[1]) > 0) await redis.pexpire(key, STATE_TTL_MS);
      ttlRefreshed.set(message.conversationKey, true);
      const question = parsed(PendingSchema, pending);
      return {
        ...(question ? { pending: question } : {}),
        ...(rated ? { rated: Number(rated) } : {}),
        ...(noted ? { language: noted } : {}),
        ...(askedAt ? { askedAt: Number(askedAt) } : {}),
      };
    },
    async read(conversationKey: string): Promise<CsatConversation> {
      const hash = await redis.hgetall(csatKey(conversationKey));
      const seen = parsed(SeenSchema, hash.seen);
      const pending = parsed(PendingSchema, hash.pending);
      const values = {
        inboundAt: numberOf(hash.inboundAt),
        replyAt: numberOf(hash.replyAt),
        apologyAt: numberOf(hash.apologyAt),
        askedAt: numberOf(hash.askedAt),
        rated: numberOf(hash.rated),
      };
      return {
        ...Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined && Number.isFinite(value))),
        ...(seen ? { seen } : {}),
        ...(pending ? { pending } : {}),
        ...(hash.role ? { role: hash.role } : {}),
        ...(hash.language ? { language: hash.language } : {}),
      };
    },
    /**
     * The reply's time and role: one HSET; the TTL follows only when that created a field (the
     * conversation's first reply, or a hash erased meanwhile) or this process has not set it today.
     */
    async noteReply(conversationKey: string, roleId: string, at: number): Promise<void> {
      const added = await redis.hset(csatKey(conversationKey), { replyAt: String(at), role: roleId });
      if (added === 0 && ttlRefreshed.has(conversationKey)) return;
      await redis.pexpire(csatKey(conversationKey), STATE_TTL_MS);
      ttlRefreshed.set(conversationKey, true);
    },
    noteApology: (conversationKey: string, at: number) => touch(conversationKey, { apologyAt: String(at) }),
    /** Marks the question asked unless one was within `cooldownMs`: true when this call may ask it. */
    async claimAsk(conversationKey: string, pending: PendingQuestion, cooldownMs: number, quietSince?: number): Promise<'asked' | 'cooldown' | 'not-quiet'> {
      const claimed = await CLAIM_ASK(
        redis,
        [csatKey(conversationKey)],
        [String(pending.askedAt), String(cooldownMs), JSON.stringify(pending), String(STATE_TTL_MS), quietSince === undefined ? '' : String(quietSince)],
      );
      return claimed === 1 ? 'asked' : claimed === 2 ? 'not-quiet' : 'cooldown';
    },
    /** The question waiting for an answer (or a comment), if any. */
    pending: async (conversationKey: string): Promise<PendingQuestion | undefined> =>
      parsed(PendingSchema, await redis.hget(csatKey(conversationKey), 'pending')),
    setPending: (conversationKey: string, pending: PendingQuestion) => touch(conversationKey, { pending: JSON.stringify(pending) }),
    /** The question is rated (and now waits for a comment): a later tap on it is told so. */
    rated: (conversationKey: string, pending: PendingQuestion) => touch(conversationKey, { pending: JSON.stringify(pending), rated: String(pending.askedAt) }),
    async clearPending(conversationKey: string): Promise<void> {
      await redis.hdel(csatKey(conversationKey), 'pending');
    },
  };
}
export type CsatState = ReturnType<typeof createCsatState>;
