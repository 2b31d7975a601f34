/**
 * What every transcript response shares: the headers that keep it private and unframeable,
 * the plain-text refusal, and the one check of a link's parts as they arrived (path and query,
 * or a posted body). Nothing here reads a conversation: a link is checked before anything is.
 */
import type { Response } from 'express';
import { z } from 'zod';
import type { LinkParts, TranscriptLinkCheck, TranscriptLinks } from './transcript-link.js';
import { TRANSCRIPT_PAGE_CSP } from './transcript-page.js';

const LinkQuerySchema = z.object({ expires: z.string().max(32), sig: z.string().max(128) });

const MAX_CONVERSATION_ID_LENGTH = 512;

export function setPrivateHeaders(response: Response, csp: string = TRANSCRIPT_PAGE_CSP): void {
  response.set({
    'Cache-Control': 'no-store',
    'X-Robots-Tag': 'noindex, nofollow',
    'Referrer-Policy': 'no-referrer',
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
  });
}

export function plainPage(response: Response, status: number, text: string): void {
  response.status(status).type('text/plain; charset=utf-8').send(`${text}\n`);
}

/** The link's verdict, and its parts when it is genuine. */
export function checkLink(links: TranscriptLinks, conversationId: string, query: unknown): { check: TranscriptLinkCheck; link: LinkParts | undefined } {
  const parsed = LinkQuerySchema.safeParse(query);
  if (!parsed.success || conversationId.length > MAX_CONVERSATION_ID_LENGTH) return { check: 'invalid', link: undefined };
  const link = { conversationId, expires: parsed.data.expires, signature: parsed.data.sig };
  const check = links.verify(conversationId, link.expires, link.signature);
  return { check, link: check === 'invalid' ? undefined : link };
}

export const refusalText: Record<Exclude<TranscriptLinkCheck, 'ok'>, [number, string]> = {
  expired: [410, 'This link has expired'],
  invalid: [403, 'This link is not valid'],
};
