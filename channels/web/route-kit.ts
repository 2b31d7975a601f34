/**
 * What every widget route shares: the options with the services spread in, the refusal (a 4xx, a
 * metric and a log line), CORS for an allowed origin, the visitor behind a token, the per-visitor
 * and per-IP request limits, the JSON body parser, and the conversation a visitor's claims name.
 */
import express, { type Request, type Response } from 'express';
import type { ChannelContext } from '../../src/channel-plugin.js';
import type { Config } from '../../src/config.js';
import type { MediaStore } from '../../src/media/media-store.js';
import type { UploadClaims } from '../../src/media/upload-claims.js';
import type { EventLog } from './event-log.js';
import { WEB_CHANNEL_ID } from './index.js';
import { checkRate } from './rate-limit.js';
import type { Site, SiteRegistry } from './sites.js';
import type { VisitorClaims, VisitorTokens } from './visitor-token.js';

export interface WidgetBundle {
  code: string;
  version: string;
  /** The lazily loaded parts by file name (`chat-<hash>.js`, see scripts/build-widget.ts): their code. */
  parts?: Record<string, string>;
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

/** Whose pending uploads an upload counts against: the visitor on their site. */
export function uploadOwnerOf(claims: Pick<VisitorClaims, 'siteKey' | 'visitorId'>): string {
  return `${claims.siteKey}:${claims.visitorId}`;
}

export function conversationKeyOf(claims: Pick<VisitorClaims, 'siteKey' | 'visitorId' | 'chatId'>): string {
  return `${WEB_CHANNEL_ID}:${claims.siteKey}:${claims.visitorId}:${claims.chatId}`;
}

export type RouteKit = ReturnType<typeof createRouteKit>;

export function createRouteKit(settings: WebRoutesOptions) {
  const { sites, tokens, services } = settings;
  const { logger, metrics } = services;
  const options = { ...settings, ...services };
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

  return { settings, options, logger, metrics, json, refuse, allowOrigin, authenticate, withinRequestLimits };
}
