/**
 * A conversation's widget events (typing, text deltas, complete messages, hand-offs, who holds
 * the conversation) in a bounded Redis stream with a TTL, so a reconnect — to any web process —
 * resumes after its Last-Event-ID without loss or repeats. Writers publish the conversation key
 * on one channel; each web process holds one subscriber connection and wakes only the listeners
 * it has. Every event's data is checked against its zod schema on the way in and on the way out;
 * fields added later are optional, so an older widget keeps working.
 */
import { z } from 'zod';
import { duplicateRedis, KEY_PREFIX, type RedisClient } from '../../src/redis.js';

const EVENT_STREAM_MAX = 500;
const EVENT_STREAM_TTL_SECONDS = 24 * 60 * 60;
const NOTIFY_CHANNEL = `${KEY_PREFIX}:events-notify`;
// Who holds the conversation outlives the stream's day: a takeover can be quiet for a while.
const HOLDER_TTL_SECONDS = 7 * 24 * 60 * 60;

/** Who wrote a message, or holds the conversation: the assistant, or a named teammate of a team. */
export const WidgetSenderSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('assistant') }),
  z.object({ kind: z.literal('teammate'), name: z.string().trim().min(1).max(80), team: z.string().trim().min(1).max(60) }),
]);
export type WidgetSender = z.infer<typeof WidgetSenderSchema>;

const ChoicesSchema = z.array(z.object({ id: z.string().min(1).max(200), label: z.string().min(1).max(80) })).max(10);

/** Each event type's data. A message without `sender` is the assistant's (events written before senders existed). */
const WidgetEventSchemas = {
  typing: z.object({}),
  delta: z.object({ messageId: z.string().min(1), text: z.string() }),
  message: z.object({
    id: z.string().min(1),
    role: z.enum(['assistant', 'visitor']),
    text: z.string(),
    replyTo: z.string().optional(),
    sender: WidgetSenderSchema.optional(),
    /** Answers the visitor may tap (a question's choices: an action's confirm/cancel, companies). */
    choices: ChoicesSchema.optional(),
    /** When the question stops taking those answers (ms since the epoch): its buttons are disabled then. */
    choicesExpireAt: z.number().int().positive().optional(),
    /** When it was written, ms since the epoch. */
    at: z.number().int().positive().optional(),
    /** the apology for a message the service gave up on (the widget offers "Try again"). */
    failed: z.literal(true).optional(),
  }),
  handoff: z.object({ team: z.string(), status: z.string().optional(), text: z.string().optional() }),
  /** Who the visitor is talking to from now on. */
  state: z.object({ holder: WidgetSenderSchema }),
} as const;

export type WidgetEventType = keyof typeof WidgetEventSchemas;
export type WidgetEventData<Type extends WidgetEventType> = z.input<(typeof WidgetEventSchemas)[Type]>;

export interface WidgetEvent {
  id: string;
  type: WidgetEventType;
  data: Record<string, unknown>;
}

const streamKey = (conversationKey: string) => `${KEY_PREFIX}:events:{${conversationKey}}`;
const holderKey = (conversationKey: string) => `${KEY_PREFIX}:events-holder:{${conversationKey}}`;
// Who wrote each teammate message (by message id), for the history a reload reads: the stored transcript knows only direction.
const sendersKey = (conversationKey: string) => `${KEY_PREFIX}:events-senders:{${conversationKey}}`;
const SENDERS_TTL_SECONDS = 30 * 24 * 60 * 60;
// what the recent history does not keep, by the message id the widget knows: when it was
// written, for a visitor's message its own text and attachments (the history holds "(1 photo) …")
// and the choice it tapped, for a question the answers it offered and until when.
const detailsKey = (conversationKey: string) => `${KEY_PREFIX}:events-details:{${conversationKey}}`;
const MessageDetailsSchema = z.object({
  at: z.number().int().positive(),
  text: z.string().optional(),
  attachments: z.array(z.object({ id: z.string(), kind: z.enum(['image', 'document']), name: z.string().optional() })).optional(),
  choice: z.string().optional(),
  choices: ChoicesSchema.optional(),
  choicesExpireAt: z.number().int().positive().optional(),
});
export type MessageDetails = z.infer<typeof MessageDetailsSchema>;
const isEventType = (value: string | undefined): value is WidgetEventType => value !== undefined && Object.hasOwn(WidgetEventSchemas, value);
const STREAM_ID = /^\d{1,20}-\d{1,20}$/;

export function isStreamId(value: string | undefined): value is string {
  return value !== undefined && STREAM_ID.test(value);
}

function parseJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '{}');
  } catch {
    return undefined;
  }
}

function toEvents(entries: [string, string[]][]): WidgetEvent[] {
  return entries.flatMap(([id, fields]) => {
    const type = fields[1];
    if (!isEventType(type)) return [];
    const data = WidgetEventSchemas[type].safeParse(parseJson(fields[3]));
    return data.success ? [{ id, type, data: data.data }] : [];
  });
}

export interface EventLog {
  /** Appends one event; data that does not match its type's schema is a bug and throws (a ZodError). */
  append<Type extends WidgetEventType>(conversationKey: string, type: Type, data: WidgetEventData<Type>): Promise<string>;
  /** Events after `afterId` (exclusive), oldest first. */
  after(conversationKey: string, afterId: string, count?: number): Promise<WidgetEvent[]>;
  /** The id of the newest event, or `0-0` when there is none. */
  tail(conversationKey: string): Promise<string>;
  /** Who holds the conversation: the last `state` event's holder, else the assistant. */
  holder(conversationKey: string): Promise<WidgetSender>;
  /** The teammates who wrote the conversation's messages, by message id (a message not here is the assistant's). */
  senders(conversationKey: string): Promise<Map<string, WidgetSender>>;
  /** Keeps a message's details for the history (the first write wins: a resent message keeps its time). */
  noteDetails(conversationKey: string, messageId: string, details: MessageDetails): Promise<void>;
  /** The details of the conversation's messages, by message id. */
  details(conversationKey: string): Promise<Map<string, MessageDetails>>;
  /** Forgets the details of messages the history no longer shows. */
  dropDetails(conversationKey: string, messageIds: readonly string[]): Promise<void>;
  /** Calls `wake` whenever the conversation gets new events; returns the unsubscribe. */
  listen(conversationKey: string, wake: () => void): () => void;
  close(): Promise<void>;
}

export function createEventLog(redis: RedisClient, onError: (error: unknown) => void = () => undefined): EventLog {
  const listeners = new Map<string, Set<() => void>>();
  let subscriber: RedisClient | undefined;
  const ensureSubscriber = () => {
    if (subscriber) return;
    subscriber = duplicateRedis(redis);
    subscriber.subscribe(NOTIFY_CHANNEL).catch(onError);
    subscriber.on('error', onError);
    subscriber.on('message', (_channel: string, conversationKey: string) => {
      for (const wake of listeners.get(conversationKey) ?? []) wake();
    });
  };

  return {
    async append(conversationKey, type, data) {
      const parsed = WidgetEventSchemas[type].parse(data);
      const payload = JSON.stringify(parsed);
      const key = streamKey(conversationKey);
      const transaction = redis.multi().xadd(key, 'MAXLEN', '~', EVENT_STREAM_MAX, '*', 'type', type, 'data', payload).expire(key, EVENT_STREAM_TTL_SECONDS);
      if (type === 'state') transaction.set(holderKey(conversationKey), payload, 'EX', HOLDER_TTL_SECONDS);
      const message = WidgetEventSchemas.message.safeParse(parsed);
      if (type === 'message' && message.success && message.data.sender?.kind === 'teammate') {
        transaction
          .hset(sendersKey(conversationKey), message.data.id, JSON.stringify(message.data.sender))
          .expire(sendersKey(conversationKey), SENDERS_TTL_SECONDS);
      }
      if (type === 'message' && message.success && message.data.at !== undefined) {
        const { at, choices, choicesExpireAt } = message.data;
        const details: MessageDetails = { at, ...(choices?.length ? { choices } : {}), ...(choicesExpireAt !== undefined ? { choicesExpireAt } : {}) };
        transaction.hsetnx(detailsKey(conversationKey), message.data.id, JSON.stringify(details)).expire(detailsKey(conversationKey), SENDERS_TTL_SECONDS);
      }
      const results = await transaction.publish(NOTIFY_CHANNEL, conversationKey).exec();
      return String(results?.[0]?.[1] ?? '');
    },

    async after(conversationKey, afterId, count = 200) {
      const entries = (await redis.xrange(streamKey(conversationKey), `(${afterId}`, '+', 'COUNT', count)) as [string, string[]][];
      return toEvents(entries);
    },

    async tail(conversationKey) {
      const [last] = (await redis.xrevrange(streamKey(conversationKey), '+', '-', 'COUNT', 1)) as [string, string[]][];
      return last?.[0] ?? '0-0';
    },

    async holder(conversationKey) {
      const stored = WidgetEventSchemas.state.safeParse(parseJson((await redis.get(holderKey(conversationKey))) ?? undefined));
      return stored.success ? stored.data.holder : { kind: 'assistant' };
    },

    async senders(conversationKey) {
      const stored = await redis.hgetall(sendersKey(conversationKey));
      const senders = new Map<string, WidgetSender>();
      for (const [id, raw] of Object.entries(stored)) {
        const sender = WidgetSenderSchema.safeParse(parseJson(raw));
        if (sender.success) senders.set(id, sender.data);
      }
      return senders;
    },

    async noteDetails(conversationKey, messageId, details) {
      const key = detailsKey(conversationKey);
      await redis
        .multi()
        .hsetnx(key, messageId, JSON.stringify(MessageDetailsSchema.parse(details)))
        .expire(key, SENDERS_TTL_SECONDS)
        .exec();
    },

    async details(conversationKey) {
      const stored = await redis.hgetall(detailsKey(conversationKey));
      const details = new Map<string, MessageDetails>();
      for (const [id, raw] of Object.entries(stored)) {
        const parsed = MessageDetailsSchema.safeParse(parseJson(raw));
        if (parsed.success) details.set(id, parsed.data);
      }
      return details;
    },

    async dropDetails(conversationKey, messageIds) {
      if (messageIds.length > 0) await redis.hdel(detailsKey(conversationKey), ...messageIds);
    },

    listen(conversationKey, wake) {
      ensureSubscriber();
      const set = listeners.get(conversationKey) ?? new Set();
      set.add(wake);
      listeners.set(conversationKey, set);
      return () => {
        set.delete(wake);
        if (set.size === 0) listeners.delete(conversationKey);
      };
    },

    async close() {
      listeners.clear();
      subscriber?.disconnect();
    },
  };
}
