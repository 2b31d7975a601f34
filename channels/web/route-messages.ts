/**
 * What a visitor sends: attachment uploads (`uploads.ts`), messages (deduped by client message id
 * within the conversation, size-capped, rate limited, naming attachments uploaded into the same
 * conversation) and typing reports.
 */
import type { Router } from 'express';
import { z } from 'zod';
import { formatIssues } from '../../src/errors/issues.js';
import { ackTimer } from '../../src/http/ack-timer.js';
import { mediaLink } from './history.js';
import { WEB_CHANNEL_ID } from './index.js';
import { scopedMessageId } from './message-ids.js';
import { checkRate } from './rate-limit.js';
import { conversationKeyOf, uploadOwnerOf, type RouteKit } from './route-kit.js';
import { visitorLanguage } from './sites.js';
import { createUploadHandler, resolveAttachments } from './uploads.js';
import { identityMetadata } from './visitor-identity.js';

const id = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, 'expected 8–64 letters, digits, - or _');

/** Media a message may name (ids the upload endpoint returned in this conversation). */
const MAX_ATTACHMENTS = 5;

const MessageRequestSchema = z
  .object({
    clientMessageId: id,
    text: z.string().trim(),
    page: z.object({ url: z.url().max(2048).optional(), title: z.string().max(200).optional() }).optional(),
    attachments: z.array(id).max(MAX_ATTACHMENTS, `at most ${MAX_ATTACHMENTS} attachments`).optional(),
    /** A tapped choice's id (`text` is its label); whatever asked checks it against its own question. */
    choice: z.string().min(1).max(200).optional(),
    /** The language the widget speaks (one it has words for); any other value is ignored. */
    language: z.string().max(35).optional(),
  })
  .refine((message) => message.text !== '' || (message.attachments?.length ?? 0) > 0, { path: ['text'], message: 'text is empty' });

/** The visitor is typing (or stopped: the composer was emptied). */
const TypingRequestSchema = z.object({ typing: z.boolean() });
/** Typing reports per visitor and minute (the widget sends at most one a second while typing), apart from other requests. */
const TYPING_REPORTS_PER_MINUTE = 90;

export function addUploadRoute(router: Router, kit: RouteKit): void {
  const { settings, options, logger, metrics, refuse, authenticate } = kit;
  router.post(
    '/api/widget/uploads',
    createUploadHandler({
      ...settings.uploads,
      visitorPerMinute: options.limits.visitorUploadsPerMinute,
      ipPerMinute: options.limits.ipUploadsPerMinute,
      pending: { maxCount: options.limits.visitorPendingUploads, maxBytes: options.limits.visitorPendingUploadBytes },
      redis: options.redis,
      logger,
      metrics,
      refuse,
      linkFor: (mediaId) => mediaLink(settings.tokens, mediaId),
      authenticate(request, response) {
        const visitor = authenticate(request, response);
        return visitor && { conversationId: conversationKeyOf(visitor.claims), visitorId: visitor.claims.visitorId, owner: uploadOwnerOf(visitor.claims) };
      },
    }),
  );
}

export function addMessageRoute(router: Router, kit: RouteKit): void {
  const { settings, options, logger, metrics, json, refuse, authenticate } = kit;
  const { events } = settings;
  router.post('/api/widget/messages', ackTimer(metrics, WEB_CHANNEL_ID), json, async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    const parsed = MessageRequestSchema.safeParse(request.body);
    if (!parsed.success) {
      refuse(response, 400, formatIssues(parsed.error.issues), 'malformed');
      return;
    }
    const { text, clientMessageId, page, attachments, choice, language } = parsed.data;
    if (text.length > options.limits.maxMessageChars) {
      refuse(response, 413, `message is longer than ${options.limits.maxMessageChars} characters`, 'too_long', { maxChars: options.limits.maxMessageChars });
      return;
    }
    const { claims, site } = visitor;
    for (const [scope, subject, limit] of [
      ['visitor', claims.visitorId, options.limits.visitorMessagesPerMinute],
      ['ip', request.ip ?? 'unknown', options.limits.ipMessagesPerMinute],
    ] as const) {
      const rate = await checkRate(options.redis, scope, subject, limit);
      if (!rate.allowed) {
        response.set('Retry-After', String(rate.retryAfterSeconds));
        refuse(response, 429, 'too many messages, retry later', `rate_${scope}`, { retryAfterSeconds: rate.retryAfterSeconds });
        return;
      }
    }
    const conversationKey = conversationKeyOf(claims);
    const media = await resolveAttachments(settings.uploads.store, conversationKey, attachments ?? []);
    if (!media.ok) {
      refuse(response, 400, `unknown attachment ${media.id}: upload it in this conversation first`, 'unknown_attachment', { attachment: media.id });
      return;
    }
    const messageId = scopedMessageId(claims.chatId, clientMessageId);
    // An upload serves one message: naming it again (this message sent again excepted) is a conflict.
    const claimed = await settings.uploads.claims.claim(uploadOwnerOf(claims), attachments ?? [], messageId);
    if (!claimed.ok) {
      refuse(
        response,
        409,
        `attachment ${claimed.id} was already sent with another message (or expired): upload the file again to send it again`,
        'attachment_reused',
        { attachment: claimed.id },
      );
      return;
    }
    // The visitor's own text, attachments and time for the history, sent beside the inbox write (no extra round trip).
    const attachmentsNoted = media.media.flatMap((item) =>
      item.id === undefined
        ? []
        : [
            {
              id: item.id,
              kind: item.contentType.startsWith('image/') ? ('image' as const) : ('document' as const),
              ...(item.filename ? { name: item.filename } : {}),
            },
          ],
    );
    const receivedAt = Date.now();
    const spoken = visitorLanguage(site, language);
    const detailsNoted = events
      .noteDetails(conversationKey, clientMessageId, {
        at: receivedAt,
        ...(attachmentsNoted.length > 0 ? { text, attachments: attachmentsNoted } : {}),
        ...(choice ? { choice } : {}),
      })
      .catch((error: unknown) => logger.warn('widget-details-failed', { error }));
    const outcome = await options.intake.accept({
      channel: WEB_CHANNEL_ID,
      conversationKey,
      messageId,
      from: { address: conversationKey },
      text,
      ...(media.media.length > 0 ? { media: media.media } : {}),
      receivedAt,
      // Built key by key: nothing the browser sends can name a metadata key, and the verified
      // user comes only from the signed token.
      metadata: {
        siteKey: site.key,
        siteName: site.name,
        ...(page?.url ? { pageUrl: page.url } : {}),
        ...(page?.title ? { pageTitle: page.title } : {}),
        ...(choice ? { choice } : {}),
        // The visitor's language (the site's when it sets one): the service's own words follow it.
        ...(spoken ? { language: spoken } : {}),
        ...(site.identitySecret ? identityMetadata(claims.user) : {}),
      },
    });
    await detailsNoted;
    metrics.increment('inbound_total', { channel: WEB_CHANNEL_ID, outcome });
    logger.info(outcome === 'accepted' ? 'inbound-accepted' : 'inbound-duplicate', { conversationKey, messageId: clientMessageId });
    response.status(202).json({ messageId: clientMessageId, duplicate: outcome === 'duplicate' });
  });
}

export function addTypingRoute(router: Router, kit: RouteKit): void {
  const { options, json, refuse, authenticate } = kit;
  // Issue 26: a turn waiting on the conversation holds its reply while the visitor types.
  router.post('/api/widget/typing', json, async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    const parsed = TypingRequestSchema.safeParse(request.body);
    if (!parsed.success) {
      refuse(response, 400, formatIssues(parsed.error.issues), 'malformed');
      return;
    }
    const rate = await checkRate(options.redis, 'visitor-typing', visitor.claims.visitorId, TYPING_REPORTS_PER_MINUTE);
    if (!rate.allowed) {
      response.set('Retry-After', String(rate.retryAfterSeconds));
      refuse(response, 429, 'too many typing reports, retry later', 'rate_visitor_typing', { retryAfterSeconds: rate.retryAfterSeconds });
      return;
    }
    await options.reportTyping({ channel: WEB_CHANNEL_ID, conversationKey: conversationKeyOf(visitor.claims) }, parsed.data.typing);
    response.status(204).end();
  });
}
