/**
 * Signed transcript links revoked for a conversation whose person was erased: a link signed
 * before the erasure stops opening the page, its media and its live stream (410), while links
 * signed afterwards work. One Redis key per conversation, named by a keyed hash of its id (never
 * the number), holding the erasure's time and living as long as a link does. Links to one file
 * (a relay's) need nothing: the erased files are gone.
 */
import { createHmac } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { plainPage, setPrivateHeaders } from './transcript-http.js';
import type { TranscriptLinks } from './transcript-link.js';

export interface LinkRevocations {
  /** Links to the conversation signed until now stop working. */
  revoke(conversationId: string): Promise<void>;
}

export function createLinkRevocations(options: { redis: RedisClient; secret: string; ttlHours: number; links: TranscriptLinks; logger: Logger }) {
  const { redis, links, logger } = options;
  const ttlSeconds = Math.ceil(options.ttlHours * 3600);
  const key = (conversationId: string) =>
    `${KEY_PREFIX}:link-revoked:{${createHmac('sha256', options.secret).update(`revoked:${conversationId}`).digest('base64url').slice(0, 32)}}`;

  /** Refuses a page link signed before the conversation's erasure (its expiry less the links' lifetime is when it was signed). */
  const guard: RequestHandler = (request, response, next) => {
    const conversationId = request.params.conversationId;
    const { expires, sig } = request.query;
    if (request.method !== 'GET' || typeof conversationId !== 'string' || typeof expires !== 'string' || typeof sig !== 'string') return next();
    if (links.verify(conversationId, expires, sig) !== 'ok') return next();
    redis
      .get(key(conversationId))
      .then((revokedAt) => {
        if (revokedAt === null || Number(expires) - ttlSeconds > Number(revokedAt)) return next();
        logger.info('transcript-link-revoked', {});
        setPrivateHeaders(response);
        plainPage(response, 410, 'This link no longer works');
      })
      .catch(next);
  };

  return {
    guard,
    async revoke(conversationId: string) {
      await redis.set(key(conversationId), String(Math.floor(Date.now() / 1000)), 'EX', ttlSeconds);
    },
  } satisfies LinkRevocations & { guard: RequestHandler };
}
