/**
 * The conversation's history (from its bounded recent messages: one `_id` read) and the files a
 * history link names.
 */
import type { Router } from 'express';
import { recentMessages } from '../../src/store/recent-messages.js';
import { createMediaHandler, historyIdOf, historyMessage, staleDetails, withQuestions } from './history.js';
import { conversationKeyOf, type RouteKit } from './route-kit.js';

// The recent history also holds notes for the model (a takeover's summary): the visitor sees only messages.
const STORED_MESSAGE_ID = /^(in|out):/;

export function addHistoryRoutes(router: Router, kit: RouteKit): void {
  const { settings, options, logger, refuse, authenticate, withinRequestLimits } = kit;
  const { events, tokens } = settings;

  router.get('/api/widget/history', async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    if (!(await withinRequestLimits(request, response, visitor.claims.visitorId))) return;
    const conversationKey = conversationKeyOf(visitor.claims);
    // The tail is read first: a reply landing meanwhile is in the events after it, never lost.
    const [lastEventId, holder, senders] = await Promise.all([events.tail(conversationKey), events.holder(conversationKey), events.senders(conversationKey)]);
    // One `_id` read of the conversation's bounded recent messages (what the model sees too):
    // a query by conversation id would scan every stored message on FerretDB.
    // with times, a visitor's own text and attachments (kept beside the recent messages).
    const [stored, details] = await Promise.all([recentMessages(options.transcripts, conversationKey), events.details(conversationKey)]);
    const recent = stored.filter((message) => STORED_MESSAGE_ID.test(message.id));
    const stale = staleDetails(details, recent);
    if (stale.length > 0) void events.dropDetails(conversationKey, stale).catch((error: unknown) => logger.warn('widget-details-failed', { error }));
    response.json({
      lastEventId,
      // Who the visitor is talking to now (the assistant, or the teammate who took the conversation over).
      state: { holder },
      messages: withQuestions(
        recent.map((message) => historyMessage(message, senders.get(message.id), details.get(historyIdOf(message)), tokens)),
        details,
      ),
    });
  });

  // a file a history link names (signed for that one file).
  router.get('/api/widget/media/:id', createMediaHandler({ tokens, store: settings.uploads.store, logger, refuse }));
}
