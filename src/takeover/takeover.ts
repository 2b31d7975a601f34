/**
 * Human takeover of a handed-off conversation: a teammate takes it over (from WhatsApp, the
 * transcript page or the admin API), answers the customer through the service, and hands it
 * back to the assistant (or closes it). `TakeoverService` is the one entry point for every
 * surface: its transitions are atomic in MongoDB (of two teammates racing, one wins), then
 * mirrored in Redis for the hot path, and everything they do to the conversation (the
 * teammate's message to the customer, telling the team who took it, telling the customer it is
 * handed back) is queued into the customer's conversation inbox as a teammate entry, so the
 * conversation lock serialises it with the assistant's turns. It never sends anything itself.
 * An end (hand-back, close) is queued after the teammate's messages still waiting but ahead of
 * the customer's, and the Redis mirror stays (marked ended) until the worker reaches it: the
 * customer hears the teammate out, is told, then the assistant answers what was waiting.
 *
 * `subscribe` streams a conversation's new messages and takeover changes (the live page).
 */
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis.js';
import type { InboundMessage, TeammateEntry } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Actor, HandoffRecord, HandoffStatus, HandoffStore } from '../handoff/handoff-store.js';
import type { Teams } from '../handoff/teams.js';
import type { TakeoverState, TakeoverStateStore } from './takeover-state.js';
import { createConversationEvents, type ConversationEvent, type LiveMessage } from './takeover-events.js';

export type { Actor, HandoffStatus, TakeoverState };

/** The longest text a teammate may send in one message (signature and WhatsApp's 1,600 limit included). */
export const MAX_TEAMMATE_TEXT = 1500;

export type { ConversationEvent, LiveMessage };

export type TakeOverResult =
  /** `by` holds it now (`claimed`: this call took it; false: they already held it). */
  | { outcome: 'taken'; claimed: boolean; handoff: HandoffRecord }
  /** Someone else holds the conversation (this hand-off or another team's). */
  | { outcome: 'held'; holder: Actor; handoff: HandoffRecord }
  /** The hand-off was handed back or closed: it can't be taken again. */
  | { outcome: 'ended'; status: HandoffStatus; handoff: HandoffRecord }
  | { outcome: 'not_found' };

export type TeammateReplyResult =
  /** Queued into the conversation: it reaches the customer once, in order, through the send ledger. */
  | { outcome: 'queued'; claimed: boolean; messageId: string; handoff: HandoffRecord }
  | { outcome: 'invalid'; error: string }
  | Exclude<TakeOverResult, { outcome: 'taken' }>;

export type HandBackResult =
  | { outcome: 'handed_back'; handoff: HandoffRecord }
  /** Someone else holds it: only they (or an operator) can hand it back. */
  | { outcome: 'not_holder'; holder: Actor; handoff: HandoffRecord }
  /** Not taken (open, or already handed back or closed). */
  | { outcome: 'not_taken'; status: HandoffStatus; handoff: HandoffRecord }
  | { outcome: 'not_found' };

export type CloseResult =
  | { outcome: 'closed'; wasTaken: boolean; handoff: HandoffRecord }
  | { outcome: 'already_ended'; status: HandoffStatus; handoff: HandoffRecord }
  | { outcome: 'not_found' };

/** Why a takeover ended; `teammate` is the holder's own `#done` or button. */
export type EndReason = 'teammate' | 'idle' | 'admin' | 'page';

export interface TakeoverService {
  /** The conversation's takeover as the hot path sees it (Redis only), or undefined when the assistant has it. */
  current(conversationId: string): Promise<TakeoverState | undefined>;
  /** The conversation's hand-offs still open or taken (what the live page can act on). */
  handoffsOf(conversationId: string): Promise<HandoffRecord[]>;
  get(handoffId: string): Promise<HandoffRecord | undefined>;
  /** Takes the hand-off's conversation over for `by`; the rest of the team is told who took it. */
  takeOver(input: { handoffId: string; by: Actor }): Promise<TakeOverResult>;
  /**
   * A teammate's message to the customer: claims the conversation first if it is open (first
   * to reply wins), then queues it. `messageId` dedupes (a Twilio SID; one is made up otherwise).
   */
  teammateReply(input: { handoffId: string; by: Actor; text: string; messageId?: string }): Promise<TeammateReplyResult>;
  /**
   * Returns the conversation to the assistant: the customer is told, the assistant's next turn
   * sees the teammate's messages and a one-line summary. With `holderOnly`, only the holder may.
   */
  handBack(input: { handoffId: string; by: Actor; reason: EndReason; holderOnly?: boolean }): Promise<HandBackResult>;
  /** Closes the hand-off (open or taken); a taken conversation goes back to the assistant as on hand-back. */
  close(input: { handoffId: string; by: Actor; reason: EndReason }): Promise<CloseResult>;
  /**
   * Tells the customer, in the service's words, what the team decided about a change they asked
   * for (a confirmed action only a teammate may run): queued in their conversation like a
   * teammate's message, once per `key`, whoever holds the conversation. False: the conversation
   * has no hand-off to say it through (nothing was queued).
   */
  tellDecision(input: { conversationId: string; handoffId?: string; by: Actor; text: string; key: string }): Promise<boolean>;
  /** Calls `listener` with each new message and takeover change of the conversation; resolves to an unsubscribe. */
  subscribe(conversationId: string, listener: (event: ConversationEvent) => void): Promise<() => Promise<void>>;
  /** Tells subscribers (the live page) about an event; best effort. */
  publish(conversationId: string, event: ConversationEvent): Promise<void>;
  /** Releases the subscriber connection (on shutdown). */
  stop(): Promise<void>;
}

export interface TakeoverServiceOptions {
  store: HandoffStore;
  state: TakeoverStateStore;
  teams: Teams;
  /** Queues an entry into its conversation's inbox (the intake: inbox + turn job). */
  intake: { accept(message: InboundMessage): Promise<'accepted' | 'duplicate'> };
  /** Schedules the idle hand-back check of a takeover. */
  scheduleIdle(state: TakeoverState): Promise<void>;
  /** A connection this service may put into subscriber mode (created on first subscribe). */
  subscriberConnection(): RedisClient;
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}

function mirrorOf(handoff: HandoffRecord, holder: Actor, takenAt: number, lastTeammateAt: number): TakeoverState {
  return {
    handoffId: handoff._id,
    conversationId: handoff.conversationId,
    channel: handoff.channel,
    team: handoff.team,
    holderId: holder.id,
    holderName: holder.name,
    holderVia: holder.via,
    ...(holder.whatsapp ? { holderWhatsapp: holder.whatsapp } : {}),
    takenAt,
    lastTeammateAt,
  };
}

export function createTakeoverService(options: TakeoverServiceOptions): TakeoverService {
  const { store, state, logger, metrics } = options;
  const now = options.now ?? Date.now;
  const teamLabel = (handoff: HandoffRecord) => options.teams[handoff.team]?.label ?? handoff.team;

  /** Queues a takeover entry into the customer's conversation. */
  const enqueue = async (handoff: HandoffRecord, entry: Omit<TeammateEntry, 'handoffId' | 'teamLabel'>, messageId: string, text = '') => {
    const message: InboundMessage = {
      channel: handoff.channel,
      conversationKey: handoff.conversationId,
      messageId,
      from: { address: handoff.customer.address, ...(handoff.customer.name ? { displayName: handoff.customer.name } : {}) },
      text,
      receivedAt: now(),
      metadata: {},
      teammate: { ...entry, handoffId: handoff._id, teamLabel: teamLabel(handoff) },
    };
    await options.intake.accept(message);
  };

  /** Takes the hand-off (or confirms `by` holds it) and mirrors the takeover in Redis. */
  const take = async (handoffId: string, by: Actor): Promise<TakeOverResult> => {
    const { taken, handoff, holder, heldBy } = await store.take(handoffId, by);
    if (!handoff) return { outcome: 'not_found' };
    if (heldBy) return { outcome: 'held', holder: holder ?? { id: 'unknown', name: 'Another teammate', via: 'system' }, handoff: heldBy };
    if (!taken && holder && holder.id !== by.id) return { outcome: 'held', holder, handoff };
    if (handoff.status !== 'taken' || !handoff.takenBy || handoff.takenBy.id !== by.id) {
      if (handoff.takenBy && handoff.takenBy.id !== by.id) return { outcome: 'held', holder: handoff.takenBy, handoff };
      return { outcome: 'ended', status: handoff.status, handoff };
    }
    // Written after the MongoDB transition won; a holder retrying (e.g. Twilio redelivering a
    // webhook whose mirror write failed) writes it again.
    const takenAt = handoff.takenAt?.getTime() ?? now();
    const previous = taken ? undefined : await state.get(handoff.conversationId);
    if (previous?.handoffId === handoffId) return { outcome: 'taken', claimed: false, handoff };
    const mirror = mirrorOf(handoff, handoff.takenBy, takenAt, previous?.lastTeammateAt ?? now());
    await state.set(mirror);
    // Ended while the mirror was written (an operator closed it): no stale "taken" left behind.
    const after = await store.get(handoffId);
    if (after?.status !== 'taken') {
      await state.clear(handoff.conversationId, handoffId, by.id);
      return { outcome: 'ended', status: after?.status ?? 'closed', handoff: after ?? handoff };
    }
    if (taken) {
      metrics.increment('takeovers_total', { team: handoff.team, via: by.via });
      logger.info('takeover-taken', { handoffId, conversationKey: handoff.conversationId, by: by.id, via: by.via });
      await options.scheduleIdle(mirror);
    }
    return { outcome: 'taken', claimed: taken, handoff };
  };

  const events = createConversationEvents(options);

  const service: TakeoverService = {
    current: (conversationId) => state.get(conversationId),
    handoffsOf: (conversationId) => store.activeFor(conversationId),
    get: (handoffId) => store.get(handoffId),

    async takeOver({ handoffId, by }) {
      const result = await take(handoffId, by);
      if (result.outcome === 'taken' && result.claimed) {
        await enqueue(result.handoff, { action: 'taken', actor: by, claimed: true }, `takeover:${handoffId}:taken`);
      }
      return result;
    },

    async teammateReply({ handoffId, by, text, messageId }) {
      const trimmed = text.trim();
      if (!trimmed) return { outcome: 'invalid', error: 'the message is empty' };
      if (trimmed.length > MAX_TEAMMATE_TEXT) return { outcome: 'invalid', error: `the message is longer than ${MAX_TEAMMATE_TEXT} characters` };
      const result = await take(handoffId, by);
      if (result.outcome !== 'taken') return result;
      const id = messageId ?? `tm_${randomUUID().replace(/-/g, '')}`;
      await enqueue(result.handoff, { action: 'reply', actor: by, claimed: result.claimed }, id, trimmed);
      logger.info('takeover-reply-queued', { handoffId, by: by.id, via: by.via, messageId: id, claimed: result.claimed });
      return { outcome: 'queued', claimed: result.claimed, messageId: id, handoff: result.handoff };
    },

    async handBack({ handoffId, by, reason, holderOnly }) {
      const ended = await store.handBack(handoffId, by, reason, holderOnly ? by.id : undefined);
      if (!ended) {
        const handoff = await store.get(handoffId);
        if (!handoff) return { outcome: 'not_found' };
        if (handoff.status === 'taken' && handoff.takenBy) return { outcome: 'not_holder', holder: handoff.takenBy, handoff };
        return { outcome: 'not_taken', status: handoff.status, handoff };
      }
      // Ended for everyone but the customer messages already queued: the mirror goes when the worker reaches the end entry.
      if (ended.takenBy) await state.end(ended.conversationId, ended._id, ended.takenBy.id, now());
      metrics.increment('takeover_handbacks_total', { team: ended.team, reason });
      logger.info('takeover-handed-back', { handoffId, conversationKey: ended.conversationId, by: by.id, reason });
      await enqueue(ended, { action: 'handed_back', actor: by, reason }, `takeover:${handoffId}:ended`);
      return { outcome: 'handed_back', handoff: ended };
    },

    async close({ handoffId, by, reason }) {
      const before = await store.close(handoffId, by, reason);
      if (!before) {
        const handoff = await store.get(handoffId);
        return handoff ? { outcome: 'already_ended', status: handoff.status, handoff } : { outcome: 'not_found' };
      }
      const wasTaken = before.status === 'taken';
      const handoff = (await store.get(handoffId)) ?? before;
      if (wasTaken && before.takenBy) await state.end(before.conversationId, before._id, before.takenBy.id, now());
      metrics.increment('takeover_closed_total', { team: before.team, was: before.status });
      logger.info('handoff-closed', { handoffId, conversationKey: before.conversationId, by: by.id, reason, wasTaken });
      // Only a taken conversation has anything to tell: the customer gets the assistant back.
      if (wasTaken) await enqueue(handoff, { action: 'closed', actor: by, reason }, `takeover:${handoffId}:ended`);
      return { outcome: 'closed', wasTaken, handoff };
    },

    async tellDecision({ conversationId, handoffId, by, text, key }) {
      const named = handoffId ? await store.get(handoffId) : undefined;
      const handoff = named?.conversationId === conversationId ? named : (await store.activeFor(conversationId))[0];
      if (!handoff) {
        logger.warn('action-decision-untold', { conversationKey: conversationId, key });
        return false;
      }
      await enqueue(handoff, { action: 'decided', actor: by }, key, text);
      logger.info('action-decision-queued', { handoffId: handoff._id, conversationKey: conversationId, by: by.id, key });
      return true;
    },

    ...events,
  };
  return service;
}
