/**
 * What the satisfaction question needs to know of a conversation, kept where the turn already
 * reads and writes so that a customer's message costs it next to nothing:
 *
 * - in the conversation's hash (`asst:tx:conv:{conversationKey}`, `transcript-conversations.ts`),
 *   which the turn's open reads whole in its one command: where the customer's last message came
 *   from (`csat:seen`: channel, address, metadata — what a question sent outside a turn is
 *   addressed by), the language they write in (`csat:language`, what a question is asked in when
 *   the channel does not say) and the role that last answered (`csat:role`), each written only
 *   when it changed; beside the hash's own `customerAt` (when the customer last wrote: the
 *   channel's window) and `historyAt` (when its history was last written: what a quiet check
 *   looks at);
 * - in a hash of its own (`asst:csat:{conversationKey}`, the same cluster slot), written only
 *   when the question is asked or answered: when it was last asked (`askedAt`, the cooldown),
 *   the question waiting for an answer (`pending`), the last question rated (`rated`, its ask
 *   time: a second tap on it is answered "already noted"), when the service last apologised for
 *   a failure (`apologyAt`). A customer's batch reads it only when the conversation's recent
 *   history holds the question's messages (or the batch taps a rating): a question waiting for
 *   its answer is always there, since its words are appended when it is asked.
 *
 * Fields an earlier version kept in its own hash (`seen`, `language`, `role`, `inboundAt`,
 * `replyAt`) are still read where a question may be asked, under the conversation's ones.
 */
import { z } from 'zod';
import type { InboundMessage } from '../contracts/index.js';
import { redisKeys } from '../queue/keys.js';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';
import { CUSTOMER_AT_FIELD, HISTORY_AT_FIELD, transcriptKeys } from '../store/transcript-keys.js';
import type { TranscriptStore } from '../store/transcript-store.js';

const csatKey = (conversationKey: string) => `${KEY_PREFIX}:csat:{${conversationKey}}`;

/** The satisfaction question's fields in the conversation's hash. */
const FIELD = { seen: 'csat:seen', language: 'csat:language', role: 'csat:role' } as const;

/** A conversation's own CSAT hash outlives its quiet period and cooldown, then goes: 9 days after its last write. */
const STATE_TTL_MS = 9 * 24 * 60 * 60 * 1000;

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
  /** When the customer last wrote (the conversation's `customerAt`, or an earlier version's `inboundAt`). */
  customerAt?: number;
  /** The latest of: its history written (`historyAt`), and an earlier version's `inboundAt` and `replyAt`. */
  activityAt?: number;
  role?: string;
  apologyAt?: number;
  askedAt?: number;
  pending?: PendingQuestion;
  rated?: number;
  language?: string;
}

/**
 * What a customer's batch finds: the question waiting for their answer, the last question they
 * rated and when they were last asked (read only when the history shows a question: else none
 * waits), their language, the role noted last.
 */
export interface InboundNote {
  pending?: PendingQuestion;
  rated?: number;
  language?: string;
  askedAt?: number;
  role?: string;
}

// KEYS[1] the CSAT hash, KEYS[2] the conversation's hash, KEYS[3] its inbox; ARGV: now, cooldown ms, pending JSON,
// ttl ms, quiet since ('' for none). 1: asked (askedAt and pending set); 0: within the cooldown; 2: not quiet — a
// message waits in the inbox (or its turn runs), or the history was written (or, by an earlier version, the
// customer or the assistant noted) after `quiet since`.
const CLAIM_ASK = luaScript(`
local asked = tonumber(redis.call('HGET', KEYS[1], 'askedAt') or '')
if asked and tonumber(ARGV[1]) - asked < tonumber(ARGV[2]) then return 0 end
if ARGV[5] ~= '' then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
  local since = tonumber(ARGV[5])
  local stamps = redis.call('HMGET', KEYS[1], 'inboundAt', 'replyAt')
  stamps[3] = redis.call('HGET', KEYS[2], '${HISTORY_AT_FIELD}')
  for i = 1, 3 do
    local stamp = tonumber(stamps[i] or '')
    if stamp and stamp > since then return 2 end
  end
end
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

const numberOf = (text: string | null | undefined) => {
  const value = text === undefined || text === null || text === '' ? undefined : Number(text);
  return value !== undefined && Number.isFinite(value) ? value : undefined;
};

/** Whether the recent history (JSON) holds a message of the question's (`offModel: 'rating'`); unreadable counts as yes. */
function questionInHistory(recent: string | undefined): boolean {
  // Written by JSON.stringify or Lua's cjson, either way without spaces (a customer's words quoting it are escaped).
  if (!recent?.includes('"offModel":"rating"')) return false;
  try {
    const entries = JSON.parse(recent) as unknown;
    return !Array.isArray(entries) || entries.some((entry) => (entry as { offModel?: unknown } | null)?.offModel === 'rating');
  } catch {
    return true;
  }
}

const latest = (...stamps: (number | undefined)[]) => {
  const known = stamps.filter((stamp): stamp is number => stamp !== undefined);
  return known.length > 0 ? Math.max(...known) : undefined;
};

export function createCsatState(redis: RedisClient, conversations: Pick<TranscriptStore, 'conversationFields'>) {
  // One round trip, no MULTI (two commands, not four): each is idempotent on its own.
  const touch = async (conversationKey: string, fields: Record<string, string>) => {
    await redis.pipeline().hset(csatKey(conversationKey), fields).pexpire(csatKey(conversationKey), STATE_TTL_MS).exec();
  };
  return {
    /**
     * Notes a customer's batch (its last message: where it came from; the language its words show,
     * if any) where it changed, and returns what waits for their answer. The conversation's hash
     * is read by joining the turn's open (no command); the CSAT hash only when its history shows
     * the question or `mayAnswer` (the batch taps a rating). Nothing is written to a conversation
     * that is not in Redis.
     */
    async noteInbound(message: InboundMessage, language: string | undefined, mayAnswer: boolean): Promise<InboundNote> {
      const key = message.conversationKey;
      const reading = conversations.conversationFields(key);
      const seen: Seen = {
        channel: message.channel,
        conversationKey: key,
        from: message.from,
        metadata: Object.fromEntries(Object.entries(message.metadata).filter(([name]) => name !== 'choice')),
      };
      const { exists, fields } = await reading;
      const seenText = JSON.stringify(seen);
      const changed = {
        ...(fields[FIELD.seen] === seenText ? {} : { [FIELD.seen]: seenText }),
        ...(language && fields[FIELD.language] !== language ? { [FIELD.language]: language } : {}),
      };
      const writing = exists && Object.keys(changed).length > 0;
      const asked = mayAnswer || questionInHistory(fields.recent);
      const noted: InboundNote = {
        ...((language ?? fields[FIELD.language]) ? { language: language ?? fields[FIELD.language] } : {}),
        ...(fields[FIELD.role] ? { role: fields[FIELD.role] } : {}),
      };
      if (!writing && !asked) return noted;
      // One round trip: the changed fields, and the question's state when it may wait.
      const batch = redis.pipeline();
      if (writing) batch.hset(transcriptKeys.conversation(key), changed);
      if (asked) batch.hmget(csatKey(key), 'pending', 'rated', 'language', 'askedAt');
      const results = (await batch.exec()) ?? [];
      for (const [error] of results) if (error) throw error;
      if (!asked) return noted;
      const [pending, rated, earlierLanguage, askedAt] = (results.at(-1)?.[1] ?? []) as (string | null)[];
      const question = parsed(PendingSchema, pending);
      const ratedAt = numberOf(rated);
      const askedTime = numberOf(askedAt);
      return {
        ...noted,
        ...(noted.language || !earlierLanguage ? {} : { language: earlierLanguage }),
        ...(question ? { pending: question } : {}),
        ...(ratedAt !== undefined ? { rated: ratedAt } : {}),
        ...(askedTime !== undefined ? { askedAt: askedTime } : {}),
      };
    },
    /** Everything known of the conversation (two reads: its hash and the CSAT hash), where a question may be asked. */
    async read(conversationKey: string): Promise<CsatConversation> {
      const [hash, { fields }] = await Promise.all([redis.hgetall(csatKey(conversationKey)), conversations.conversationFields(conversationKey)]);
      const seen = parsed(SeenSchema, fields[FIELD.seen]) ?? parsed(SeenSchema, hash.seen);
      const pending = parsed(PendingSchema, hash.pending);
      const inboundAt = numberOf(hash.inboundAt);
      const values = {
        customerAt: latest(numberOf(fields[CUSTOMER_AT_FIELD]), inboundAt),
        activityAt: latest(numberOf(fields[HISTORY_AT_FIELD]), inboundAt, numberOf(hash.replyAt)),
        apologyAt: numberOf(hash.apologyAt),
        askedAt: numberOf(hash.askedAt),
        rated: numberOf(hash.rated),
      };
      const role = fields[FIELD.role] ?? hash.role;
      const language = fields[FIELD.language] ?? hash.language;
      return {
        ...Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)),
        ...(seen ? { seen } : {}),
        ...(pending ? { pending } : {}),
        ...(role ? { role } : {}),
        ...(language ? { language } : {}),
      };
    },
    /** The role that answered the conversation (one HSET in its hash, which the turn holds open): the caller writes it only when it changed. */
    async noteRole(conversationKey: string, roleId: string): Promise<void> {
      await redis.hset(transcriptKeys.conversation(conversationKey), FIELD.role, roleId);
    },
    noteApology: (conversationKey: string, at: number) => touch(conversationKey, { apologyAt: String(at) }),
    /**
     * Marks the question asked unless one was within `cooldownMs` or, for a quiet check, the
     * conversation is no longer quiet since `quietSince`: 'asked' when this call may ask it.
     */
    async claimAsk(conversationKey: string, pending: PendingQuestion, cooldownMs: number, quietSince?: number): Promise<'asked' | 'cooldown' | 'not-quiet'> {
      const claimed = await CLAIM_ASK(
        redis,
        [csatKey(conversationKey), transcriptKeys.conversation(conversationKey), redisKeys.inbox(conversationKey)],
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
