/**
 * A conversation's live events (new messages, takeover changes) for the live page: published
 * through Redis pub/sub by whichever process makes them, heard by the processes that have a
 * page on the conversation. A conversation is marked watched while a process listens, so a
 * worker publishes only what someone is watching.
 */
import { z } from 'zod';
import type { RedisClient } from '../redis.js';
import type { Logger } from '../logger.js';
import { MediaReferenceSchema } from '../media/content-check.js';
import { takeoverKeys, WATCHED_TTL_SECONDS, type TakeoverStateStore } from './takeover-state.js';

const ConversationEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('message'),
    /** One message of the conversation as the live page shows it. */
    message: z.object({
      /** The transcript's message id (`in:…`/`out:…`), stable across retries. */
      id: z.string(),
      author: z.enum(['customer', 'assistant', 'teammate', 'system']),
      /** The teammate's name (author `teammate`). */
      name: z.string().optional(),
      text: z.string(),
      /** ms since the epoch. */
      at: z.number(),
      /** It went out as an approved template (outside WhatsApp's 24-hour window). */
      template: z.boolean().optional(),
      /** A customer's photos, voice notes and documents (store ids; the page signs its own links to them). */
      media: z.array(MediaReferenceSchema).max(10).optional(),
    }),
  }),
  z.object({
    type: z.literal('takeover'),
    status: z.enum(['taken', 'handed_back', 'closed']),
    handoffId: z.string(),
    by: z.object({ name: z.string(), via: z.enum(['whatsapp', 'page', 'admin', 'system']) }),
    at: z.number(),
  }),
]);
/** What a subscriber to a conversation is told: a new message, or a takeover change. */
export type ConversationEvent = z.infer<typeof ConversationEventSchema>;
/** One message of a conversation as the live page shows it. */
export type LiveMessage = Extract<ConversationEvent, { type: 'message' }>['message'];

/** The takeover service's side of the live page: subscribe, publish, stop. */
export function createConversationEvents(options: {
  state: TakeoverStateStore;
  /** A connection this service may put into subscriber mode (created on first subscribe). */
  subscriberConnection(): RedisClient;
  logger: Logger;
}) {
  const { state, logger } = options;
  let subscriber: RedisClient | undefined;
  const listeners = new Map<string, Set<(event: ConversationEvent) => void>>();
  /** Conversations this process has live pages on: kept marked watched while it has (see `TakeoverStateStore.watch`). */
  const watching = new Set<string>();
  let rewatch: NodeJS.Timeout | undefined;

  return {
    /** Calls `listener` with each new message and takeover change of the conversation; resolves to an unsubscribe. */
    async subscribe(conversationId: string, listener: (event: ConversationEvent) => void): Promise<() => Promise<void>> {
      const channel = takeoverKeys.events(conversationId);
      if (!subscriber) {
        const connection = options.subscriberConnection();
        subscriber = connection;
        connection.on('message', (from: string, raw: string) => {
          const targets = listeners.get(from);
          if (!targets) return;
          let parsed: ReturnType<typeof ConversationEventSchema.safeParse>;
          try {
            parsed = ConversationEventSchema.safeParse(JSON.parse(raw));
          } catch {
            logger.warn('takeover-event-unreadable', { channel: from });
            return;
          }
          if (!parsed.success) return;
          for (const target of targets) target(parsed.data);
        });
      }
      const connection = subscriber;
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        await connection.subscribe(channel);
        // Watched from now on: a worker publishes a conversation's messages only while marked so.
        watching.add(conversationId);
        await state.watch([conversationId]);
        rewatch ??= setInterval(
          () => {
            void state.watch([...watching]).catch((error: unknown) => logger.warn('takeover-watch-failed', { error }));
          },
          (WATCHED_TTL_SECONDS * 1000) / 3,
        );
        rewatch.unref();
      }
      set.add(listener);
      return async () => {
        const current = listeners.get(channel);
        current?.delete(listener);
        if (current && current.size === 0) {
          listeners.delete(channel);
          // Its mark expires on its own (another process may still watch it).
          watching.delete(conversationId);
          await connection.unsubscribe(channel).catch(() => undefined);
        }
      };
    },

    /** Tells subscribers (the live page) about an event; best effort. */
    async publish(conversationId: string, event: ConversationEvent): Promise<void> {
      await state
        .publish(conversationId, event)
        .catch((error: unknown) => logger.warn('takeover-event-unpublished', { conversationKey: conversationId, error }));
    },

    /** Releases the subscriber connection (on shutdown). */
    async stop(): Promise<void> {
      listeners.clear();
      watching.clear();
      clearInterval(rewatch);
      await subscriber?.quit().catch(() => undefined);
    },
  };
}
