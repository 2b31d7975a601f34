/**
 * The widget's HTTP surface: the script (versioned, long-cached), visitor sessions (the
 * service chooses the visitor id; a website-verified user is bound into the token), history
 * from the conversation's bounded recent messages (one `_id` read), message posting (deduped
 * by client message id within the conversation, size-capped, rate limited, naming attachments
 * uploaded through `uploads.ts` into the same conversation) and the
 * Server-Sent Events stream (a few per visitor), plus the demo page. Every endpoint a browser
 * calls is rate limited per visitor and per IP. CORS is granted only to the origins a site
 * allows; every refusal is a clear 4xx and a log line.
 */
import { randomUUID } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { formatIssues } from '../../src/errors/issues.js';
import { ackTimer } from '../../src/http/ack-timer.js';
import type { ChannelContext } from '../../src/channel-plugin.js';
import { recentMessages } from '../../src/store/recent-messages.js';
import { isStreamId, type EventLog } from './event-log.js';
import { createMediaHandler, historyIdOf, historyMessage, staleDetails, withQuestions } from './history.js';
import { WEB_CHANNEL_ID } from './index.js';
import { scopedMessageId } from './message-ids.js';
import { sendWidgetScript } from './widget-script.js';
import { WIDGET_CATALOGUES } from './widget-catalogues.js';
import { checkRate } from './rate-limit.js';
import { DEMO_SITE_KEY, visitorLanguage, type Site, type SiteRegistry } from './sites.js';
import { createStreamSlots, type StreamSlot } from './stream-slots.js';
import { identityMetadata, verifyVisitorIdentity, type VerifiedUser } from './visitor-identity.js';
import { newVisitorId, type VisitorClaims, type VisitorTokens } from './visitor-token.js';
import { demoPage } from './demo-page.js';
import { createUploadHandler, resolveAttachments } from './uploads.js';
import type { MediaStore } from '../../src/media/media-store.js';
import type { UploadClaims } from '../../src/media/upload-claims.js';
import type { Config } from '../../src/config.js';

export interface WidgetBundle {
  code: string;
  version: string;
}

export interface WebRoutesOptions {
  sites: SiteRegistry;
  tokens: VisitorTokens;
  events: EventLog;
  widget: () => Promise<WidgetBundle>;
  /** The widget limits of the configuration (message size, rates, streams per visitor). */
  limits: Omit<Config['web'], 'sitesJson' | 'tokenSecret'>;
  /** Redis (rate limits, stream slots), transcripts, intake, logger, metrics, and the draining signal: open streams end on it. */
  services: Pick<ChannelContext, 'redis' | 'transcripts' | 'intake' | 'resetConversation' | 'reportTyping' | 'logger' | 'metrics' | 'shutdown'>;
  /** Where visitors' attachments go, the pending uploads (one message claims each), and the size cap (MEDIA_MAX_BYTES). */
  uploads: { store: Pick<MediaStore, 'put' | 'info' | 'open'>; claims: UploadClaims; maxBytes: number };
}

const HEARTBEAT_MS = 15_000;
const id = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, 'expected 8–64 letters, digits, - or _');

// A `visitorId` the browser sends is ignored: the service chooses it, and a returning visitor
// proves who they are with their token.
const SessionRequestSchema = z.object({
  siteKey: z.string().min(1).max(64),
  token: z.string().max(2048).optional(),
  /** The signed-in user as the site signed them; checked by verifyVisitorIdentity, never trusted as is. */
  user: z.unknown().optional(),
});

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

// The recent history also holds notes for the model (a takeover's summary): the visitor sees only messages.
const STORED_MESSAGE_ID = /^(in|out):/;

/** Whose pending uploads an upload counts against: the visitor on their site. */
function uploadOwnerOf(claims: Pick<VisitorClaims, 'siteKey' | 'visitorId'>): string {
  return `${claims.siteKey}:${claims.visitorId}`;
}

function conversationKeyOf(claims: Pick<VisitorClaims, 'siteKey' | 'visitorId' | 'chatId'>): string {
  return `${WEB_CHANNEL_ID}:${claims.siteKey}:${claims.visitorId}:${claims.chatId}`;
}

function publicSite(site: Site, maxMessageChars: number, maxUploadBytes: number) {
  return { name: site.name, greeting: site.greeting, accentColor: site.accentColor, language: site.language, maxMessageChars, maxUploadBytes };
}

/**
 * What Express keeps on a request for its routing (each router's `next` with the state it saved,
 * the parsed URL, params), let go once an event stream is open: nothing reads it again, and it
 * would otherwise stay for the stream's whole life (~2 KiB a stream).
 */
function releaseRouting(request: Request, response: Response): void {
  const routing = request as unknown as Record<string, unknown>;
  for (const key of ['next', '_parsedUrl', 'params', 'route']) routing[key] = undefined;
  (response as unknown as Record<string, unknown>).locals = undefined;
}

/**
 * The process's open event streams: one timer beats them all (a comment line, and the stream's
 * slot marked alive) instead of a timer and closure per stream, and shutdown ends them all.
 */
function createOpenStreams(heartbeatMs: number, onSlotError: (error: unknown) => void) {
  const open = new Map<Response, StreamSlot>();
  let timer: ReturnType<typeof setInterval> | undefined;
  const beat = () => {
    for (const [response, slot] of open) {
      response.write(': heartbeat\n\n');
      slot.refresh().catch(onSlotError);
    }
  };
  return {
    add(response: Response, slot: StreamSlot): void {
      open.set(response, slot);
      timer ??= setInterval(beat, heartbeatMs);
    },
    delete(response: Response): void {
      open.delete(response);
      if (open.size > 0) return;
      clearInterval(timer);
      timer = undefined;
    },
    endAll(): void {
      for (const response of open.keys()) response.end();
    },
  };
}

export function createWebRouter(settings: WebRoutesOptions): Router {
  const { sites, tokens, events, services } = settings;
  const { logger, metrics } = services;
  const options = { ...settings, ...services };
  const router = express.Router();
  const streamSlots = createStreamSlots(options.redis, { perVisitor: options.limits.streamsPerVisitor, heartbeatMs: HEARTBEAT_MS });
  const openStreams = createOpenStreams(HEARTBEAT_MS, (error) => logger.warn('widget-stream-slot-failed', { error }));
  options.shutdown.addEventListener('abort', () => openStreams.endAll(), { once: true });
  const json = express.json({ limit: '16kb', strict: true });

  const refuse = (response: Response, status: number, error: string, reason: string, fields: Record<string, unknown> = {}) => {
    metrics.increment('widget_rejected_total', { reason });
    logger.warn('widget-request-rejected', { status, reason, ...fields });
    response.status(status).json({ error, ...fields });
  };

  const allowOrigin = (request: Request, response: Response) => {
    const origin = request.get('origin');
    if (origin) {
      response.set('Access-Control-Allow-Origin', origin);
      response.set('Access-Control-Expose-Headers', 'Retry-After');
      response.vary('Origin');
    }
  };

  /** The visitor behind a Bearer (or, for EventSource, `?token=`) token whose site allows this origin. */
  const authenticate = (request: Request, response: Response): { claims: VisitorClaims; site: Site } | undefined => {
    const header = request.get('authorization');
    const token = header?.startsWith('Bearer ') ? header.slice(7) : typeof request.query.token === 'string' ? request.query.token : undefined;
    const check = tokens.verify(token);
    if (!check.ok) {
      // Readable by a widget on any site's origin, so it can renew its session.
      if (sites.anyAllows(request.get('origin'))) allowOrigin(request, response);
      refuse(response, 401, check.reason === 'expired' ? 'token expired' : 'invalid token', `token_${check.reason}`);
      return undefined;
    }
    const site = sites.get(check.claims.siteKey);
    const origin = request.get('origin');
    if (!site || (origin !== undefined && !sites.allows(site, origin))) {
      refuse(response, 403, 'this origin is not allowed for the site', 'origin', { origin: origin ?? null });
      return undefined;
    }
    allowOrigin(request, response);
    return { claims: check.claims, site };
  };

  /** Per-visitor (when known) and per-IP limits on requests other than messages; false after a 429. */
  const withinRequestLimits = async (request: Request, response: Response, visitorId: string | undefined): Promise<boolean> => {
    const checks = [
      ...(visitorId ? [['visitor', visitorId, options.limits.visitorRequestsPerMinute] as const] : []),
      ['ip', request.ip ?? 'unknown', options.limits.ipRequestsPerMinute] as const,
    ];
    for (const [scope, subject, limit] of checks) {
      const rate = await checkRate(options.redis, `${scope}-requests`, subject, limit);
      if (!rate.allowed) {
        response.set('Retry-After', String(rate.retryAfterSeconds));
        refuse(response, 429, 'too many requests, retry later', `rate_${scope}_requests`, { retryAfterSeconds: rate.retryAfterSeconds });
        return false;
      }
    }
    return true;
  };

  // a page on any origin may ask for a session and read why it is refused (403, 404): a
  // widget then tells the site's developer the real reason instead of guessing from a CORS error,
  // and "no answer" means only that the service is unreachable.
  router.options('/api/widget/session', (request, response) => {
    allowOrigin(request, response);
    response.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
    response.set('Access-Control-Allow-Headers', 'content-type');
    response.set('Access-Control-Max-Age', '600');
    response.status(204).end();
  });

  router.options('/api/widget/{*rest}', (request, response) => {
    const origin = request.get('origin');
    if (!sites.anyAllows(origin)) {
      refuse(response, 403, 'this origin is not allowed', 'origin', { origin: origin ?? null });
      return;
    }
    allowOrigin(request, response);
    response.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    response.set('Access-Control-Allow-Headers', 'authorization, content-type, last-event-id');
    response.set('Access-Control-Max-Age', '600');
    response.status(204).end();
  });

  // the script itself (compressed), not a redirect: one round trip less before the launcher shows.
  router.get('/widget.js', async (request, response) => {
    sendWidgetScript(request, response, await options.widget(), 'public, max-age=300');
  });

  // the widget's words in a language other than English, fetched only by a widget that speaks it.
  router.get('/widget/i18n/:language.json', (request, response) => {
    const catalogue = Object.hasOwn(WIDGET_CATALOGUES, request.params.language) ? WIDGET_CATALOGUES[request.params.language] : undefined;
    response.set('Access-Control-Allow-Origin', '*');
    if (!catalogue) {
      response.status(404).json({ error: 'no such language' });
      return;
    }
    response.set('Cache-Control', 'public, max-age=86400').json(catalogue);
  });

  router.get('/widget/:version/widget.js', async (request, response) => {
    const bundle = await options.widget();
    if (request.params.version !== bundle.version) {
      response.redirect(302, `/widget/${bundle.version}/widget.js`);
      return;
    }
    sendWidgetScript(request, response, bundle, 'public, max-age=31536000, immutable');
  });

  router.get('/demo', (_request, response) => {
    const site = sites.get(DEMO_SITE_KEY);
    if (!site) {
      response.status(404).json({ error: 'no demo site is configured (WEB_SITES has no "demo" site)' });
      return;
    }
    response.set('Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:");
    response.type('html').send(demoPage(site));
  });

  router.post('/api/widget/session', json, async (request, response) => {
    // Readable by the page whatever its origin: a refusal says why (nothing else is answered).
    allowOrigin(request, response);
    const parsed = SessionRequestSchema.safeParse(request.body);
    if (!parsed.success) {
      refuse(response, 400, formatIssues(parsed.error.issues), 'malformed');
      return;
    }
    const site = sites.get(parsed.data.siteKey);
    if (!site) {
      refuse(response, 404, 'unknown site key', 'unknown_site');
      return;
    }
    const origin = request.get('origin');
    if (!sites.allows(site, origin)) {
      refuse(response, 403, 'this origin is not allowed for the site', 'origin', { origin: origin ?? null });
      return;
    }
    // A token of this site (even an expired one, if genuinely signed and within its renewal
    // window) keeps its visitor, chat and verified user.
    const previous = tokens.verify(parsed.data.token);
    let claims = previous.claims?.siteKey === site.key ? previous.claims : undefined;
    if (claims && !tokens.renewable(claims)) {
      logger.info('widget-session-not-renewed', { siteKey: site.key, reason: 'renewal_window' });
      claims = undefined;
    }
    if (!(await withinRequestLimits(request, response, claims?.visitorId))) return;
    const identity = verifyVisitorIdentity(site, parsed.data.user, {
      maxAgeSeconds: options.limits.identityMaxAgeSeconds,
      legacy: options.limits.identityLegacy,
    });
    const outcome = identity.status === 'rejected' ? identity.reason : identity.status === 'verified' && identity.legacy ? 'verified_legacy' : identity.status;
    metrics.increment('widget_identity_total', { outcome });
    if (identity.status === 'verified' && identity.legacy) {
      // Accepted while WEB_IDENTITY_LEGACY is on: the site still signs without data-user-ts (such a hash never expires).
      logger.info('widget-identity-legacy', { siteKey: site.key });
    }
    if (identity.status === 'rejected') {
      // The visitor carries on as whoever their token already says (anonymous, or the user it was issued to).
      logger.warn('widget-identity-rejected', { siteKey: site.key, reason: identity.reason });
    }
    const verified = identity.status === 'verified' ? identity.user : undefined;
    if (claims?.user && verified && verified.id !== claims.user.id) {
      // Another user signed in on this browser: they get their own visitor, never the last one's chats.
      logger.info('widget-identity-switched', { siteKey: site.key });
      claims = undefined;
    }
    // A site that stopped verifying users (no secret any more) has no verified visitors left.
    const user: VerifiedUser | undefined = site.identitySecret ? (verified ?? claims?.user) : undefined;
    const visitorId = claims?.visitorId ?? newVisitorId();
    const chatId = claims?.chatId ?? randomUUID();
    const issued = tokens.issue({ siteKey: site.key, visitorId, chatId, ...(user ? { user } : {}) });
    metrics.increment('widget_sessions_total', { renewed: String(Boolean(claims)) });
    response.json({
      token: issued.token,
      expiresAt: issued.expiresAt,
      visitorId,
      conversationId: conversationKeyOf({ siteKey: site.key, visitorId, chatId }),
      site: publicSite(site, options.limits.maxMessageChars, settings.uploads.maxBytes),
    });
  });

  router.post('/api/widget/new-chat', async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    const { claims, site } = visitor;
    if (!(await withinRequestLimits(request, response, claims.visitorId))) return;
    const chatId = randomUUID();
    const issued = tokens.issue({ siteKey: site.key, visitorId: claims.visitorId, chatId, ...(claims.user ? { user: claims.user } : {}) });
    void options.resetConversation(conversationKeyOf(claims)).catch((error: unknown) => {
      logger.warn('widget-reset-failed', { error });
    });
    response.json({ token: issued.token, expiresAt: issued.expiresAt, conversationId: conversationKeyOf({ ...claims, chatId }) });
  });

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
      authenticate(request, response) {
        const visitor = authenticate(request, response);
        return visitor && { conversationId: conversationKeyOf(visitor.claims), visitorId: visitor.claims.visitorId, owner: uploadOwnerOf(visitor.claims) };
      },
    }),
  );

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

  router.get('/api/widget/events', async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    if (!(await withinRequestLimits(request, response, visitor.claims.visitorId))) return;
    const slot = await streamSlots.take(`${visitor.claims.siteKey}:${visitor.claims.visitorId}`);
    if (!slot) {
      refuse(response, 429, `at most ${options.limits.streamsPerVisitor} open event streams per visitor`, 'streams', {
        maxStreams: options.limits.streamsPerVisitor,
      });
      return;
    }
    const conversationKey = conversationKeyOf(visitor.claims);
    const requested = request.get('last-event-id') ?? (typeof request.query.lastEventId === 'string' ? request.query.lastEventId : undefined);
    let cursor: string;
    try {
      cursor = isStreamId(requested) ? requested : await events.tail(conversationKey);
    } catch (error) {
      await slot.release().catch(() => undefined);
      throw error;
    }

    response.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    response.flushHeaders();
    response.write('retry: 2000\n\n');
    metrics.increment('widget_streams_opened_total');
    releaseRouting(request, response);

    let draining = Promise.resolve();
    const pull = () => {
      draining = draining.then(async () => {
        try {
          for (;;) {
            const batch = await events.after(conversationKey, cursor);
            const last = batch.at(-1);
            if (!last) return;
            for (const event of batch) response.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`);
            cursor = last.id;
          }
        } catch (error) {
          logger.warn('widget-stream-read-failed', { error });
        }
      });
    };
    const unsubscribe = events.listen(conversationKey, pull);
    pull();
    if (options.shutdown.aborted) response.end();
    else openStreams.add(response, slot);
    request.on('close', () => {
      openStreams.delete(response);
      unsubscribe();
      slot.release().catch((error: unknown) => logger.warn('widget-stream-slot-failed', { error }));
    });
  });

  return router;
}
