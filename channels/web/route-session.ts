/**
 * Visitor sessions: the service chooses the visitor id (a returning visitor proves who they are
 * with their token), a website-verified user is bound into the token and goes on only on pages
 * naming that user (a page signed in as somebody else, or as nobody, gets a visitor of its own);
 * a new chat keeps the visitor.
 */
import { randomUUID } from 'node:crypto';
import type { Router } from 'express';
import { z } from 'zod';
import { formatIssues } from '../../src/errors/issues.js';
import { conversationKeyOf, type RouteKit } from './route-kit.js';
import type { Site } from './sites.js';
import { verifyVisitorIdentity, type VerifiedUser } from './visitor-identity.js';
import { newVisitorId } from './visitor-token.js';

// A `visitorId` the browser sends is ignored: the service chooses it, and a returning visitor
// proves who they are with their token.
const SessionRequestSchema = z.object({
  siteKey: z.string().min(1).max(64),
  token: z.string().max(2048).optional(),
  /** The signed-in user as the site signed them; checked by verifyVisitorIdentity, never trusted as is. */
  user: z.unknown().optional(),
});

/** The user id a page names (signed or not): a token's user goes on only on a page naming that same user. */
function claimedUserId(user: unknown): string | undefined {
  return typeof user === 'object' && user !== null && 'id' in user && typeof user.id === 'string' ? user.id : undefined;
}

function publicSite(site: Site, maxMessageChars: number, maxUploadBytes: number) {
  return { name: site.name, greeting: site.greeting, accentColor: site.accentColor, language: site.language, maxMessageChars, maxUploadBytes };
}

export function addSessionRoutes(router: Router, kit: RouteKit): void {
  const { settings, options, logger, metrics, json, refuse, allowOrigin, authenticate, withinRequestLimits } = kit;
  const { sites, tokens } = settings;

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
    if (claims?.user && claimedUserId(parsed.data.user) !== claims.user.id) {
      // The page is signed in as another user, or as nobody (signed out): a visitor of its own, never the last user's chats.
      logger.info('widget-identity-switched', { siteKey: site.key, signedOut: parsed.data.user === undefined || parsed.data.user === null });
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
}
