/**
 * A conversation's widget events (typing, text deltas, complete messages, hand-offs) in a
 * bounded Redis stream with a TTL, so a reconnect — to any web process — resumes after its
 * Last-Event-ID without loss or repeats. Writers publish the conversation key on one channel;
 * each web process holds one subscriber connection and wakes only the listeners it has.
 */
import { duplicateRedis, KEY_PREFIX, type RedisClient } from '../../src/redis.js';

const EVENT_STREAM_MAX = 500;
const EVENT_STREAM_TTL_SECONDS = 24 * 60 * 60;
const NOTIFY_CHANNEL = `${KEY_PREFIX}:events-notify`;

export type WidgetEventType = 'typing' | 'delta' | 'message' | 'handoff';

export interface WidgetEvent {
  id: string;
  type: WidgetEventType;
  data: Record<string, unknown>;
}

const streamKey = (conversationKey: string) => `${KEY_PREFIX}:events:{${conversationKey}}`;
const STREAM_ID = /^\d{1,20}-\d{1,20}$/;

export function isStreamId(value: string | undefined): value is string {
  return value !== undefined && STREAM_ID.test(value);
}

function toEvents(entries: [string, string[]][]): WidgetEvent[] {
  return entries.flatMap(([id, fields]) => {
    const type = fields[1] as WidgetEventType;
    try {
      return [{ id, type, data: JSON.parse(fields[3] ?? '{}') as Record<string, unknown> }];
    } catch {
      return [];
    }
  });
}

export interface EventLog {
  append(conversationKey: string, type: WidgetEventType, data: Record<string, unknown>): Promise<string>;
  /** Events after `afterId` (exclusive), oldest first. */
  after(conversationKey: string, afterId: string, count?: number): Promise<WidgetEvent[]>;
  /** The id of the newest event, or `0-0` when there is none. */
  tail(conversationKey: string): Promise<string>;
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
      const key = streamKey(conversationKey);
      const results = await redis
        .multi()
        .xadd(key, 'MAXLEN', '~', EVENT_STREAM_MAX, '*', 'type', type, 'data', JSON.stringify(data))
        .expire(key, EVENT_STREAM_TTL_SECONDS)
        .publish(NOTIFY_CHANNEL, conversationKey)
        .exec();
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
