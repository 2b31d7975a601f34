/**
 * What a worker holding a conversation hears about it while a turn runs, without asking Redis:
 * the inbox's accept script publishes on one channel when a message arrives while the
 * conversation's lock is held (with the inbox's new length), and the typing report does when the
 * customer starts or stops typing. One subscriber connection per worker process; a turn watches
 * its conversation in memory (no command per turn). A notice lost to a reconnect costs only the
 * restart it would have caused: the message is in the inbox, and the next turn answers it.
 */
import type { Logger } from '../logger.js';
import { duplicateRedis, type RedisClient } from '../redis.js';
import { INBOX_NOTICE_CHANNEL } from './keys.js';

export type InboxNotice =
  /** A message was appended; the inbox now holds `length` entries. */
  | { kind: 'grew'; length: number }
  /** The customer is typing (the report stands `standsMs`), or stopped (0). */
  | { kind: 'typing'; standsMs: number };

export interface InboxNotices {
  /** Resolves once the subscription is in place (notices before it are not heard). */
  ready: Promise<void>;
  /** Calls `listener` with each notice about the conversation until the returned function is called. */
  watch(conversationKey: string, listener: (notice: InboxNotice) => void): () => void;
  close(): Promise<void>;
}

/** Parses `grew|<length>|<conversation key>` or `typing|<ms>|<conversation key>`. */
function parse(message: string): { conversationKey: string; notice: InboxNotice } | undefined {
  const first = message.indexOf('|');
  const second = message.indexOf('|', first + 1);
  if (first < 0 || second < 0) return undefined;
  const kind = message.slice(0, first);
  const value = Number(message.slice(first + 1, second));
  const conversationKey = message.slice(second + 1);
  if (!Number.isFinite(value) || !conversationKey) return undefined;
  if (kind === 'grew') return { conversationKey, notice: { kind, length: value } };
  if (kind === 'typing') return { conversationKey, notice: { kind, standsMs: value } };
  return undefined;
}

export function createInboxNotices(redis: RedisClient, logger: Logger): InboxNotices {
  const watchers = new Map<string, Set<(notice: InboxNotice) => void>>();
  const subscriber = duplicateRedis(redis);
  subscriber.on('error', (error: unknown) => logger.warn('inbox-notices-subscriber-error', { error }));
  subscriber.on('message', (_channel: string, message: string) => {
    const parsed = parse(message);
    if (!parsed) return;
    for (const listener of watchers.get(parsed.conversationKey) ?? []) listener(parsed.notice);
  });
  const ready = subscriber.subscribe(INBOX_NOTICE_CHANNEL).then(
    () => undefined,
    (error: unknown) => logger.warn('inbox-notices-subscribe-failed', { error }),
  );
  return {
    ready,
    watch(conversationKey, listener) {
      let listeners = watchers.get(conversationKey);
      if (!listeners) watchers.set(conversationKey, (listeners = new Set()));
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && watchers.get(conversationKey) === listeners) watchers.delete(conversationKey);
      };
    },
    async close() {
      watchers.clear();
      await subscriber.quit().catch(() => undefined);
    },
  };
}
