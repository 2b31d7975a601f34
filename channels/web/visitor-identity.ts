/**
 * Website-verified visitor identity, as Intercom's and Chatwoot's identity verification work:
 * the site's backend signs the signed-in user with the site's `identitySecret` and the page
 * passes the result on the widget's script tag; the widget forwards it on `/session`.
 *
 *   data-user-hash = hex(HMAC-SHA256(identitySecret, payload))
 *   payload        = [userId, email ?? '', name ?? ''].join('\n') with trailing '\n's removed
 *
 * so a user id alone is signed as just the id. Every field the page passes is covered: an
 * email or name the signature does not cover makes the whole identity untrusted. The hash is
 * compared in constant time. This module only says whether the identity is genuine; it never
 * decides what a verified user may see.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ExternalIdSchema } from '../../src/contacts/contact-store.js';
import type { Site } from './sites.js';

/** A signed-in user as the site vouched for them. */
export interface VerifiedUser {
  id: string;
  email?: string;
  name?: string;
}

const noNewline = (value: string) => !/[\r\n]/.test(value);

/** What the widget sends; checked here rather than by the request schema, so a bad one is ignored, not a 400. */
const ClaimedUserSchema = z.strictObject({
  id: ExternalIdSchema,
  hash: z.string().regex(/^[0-9a-fA-F]{64}$/, 'expected 64 hex digits'),
  email: z.email().max(254).refine(noNewline).optional(),
  name: z.string().min(1).max(80).refine(noNewline, 'no line breaks').optional(),
});

export type IdentityCheck =
  { status: 'none' } | { status: 'verified'; user: VerifiedUser } | { status: 'rejected'; reason: 'not_configured' | 'malformed' | 'bad_hash' };

/** The string a site signs for a user: the fields joined by newlines, trailing empty ones dropped. */
function identityPayload(user: VerifiedUser): string {
  return [user.id, user.email ?? '', user.name ?? ''].join('\n').replace(/\n+$/, '');
}

export function verifyVisitorIdentity(site: Site, claimed: unknown): IdentityCheck {
  if (claimed === undefined || claimed === null) return { status: 'none' };
  if (!site.identitySecret) return { status: 'rejected', reason: 'not_configured' };
  const parsed = ClaimedUserSchema.safeParse(claimed);
  if (!parsed.success) return { status: 'rejected', reason: 'malformed' };
  const { hash, ...fields } = parsed.data;
  const user: VerifiedUser = { id: fields.id, ...(fields.email ? { email: fields.email } : {}), ...(fields.name ? { name: fields.name } : {}) };
  const expected = createHmac('sha256', site.identitySecret).update(identityPayload(user)).digest();
  const given = Buffer.from(hash, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { status: 'rejected', reason: 'bad_hash' };
  return { status: 'verified', user };
}

/**
 * Where a verified user travels on an inbound message: metadata keys only the service sets,
 * from the visitor token's claims — never from anything the browser sends with a message.
 */
const METADATA_KEYS = { id: 'verifiedUserId', email: 'verifiedUserEmail', name: 'verifiedUserName' } as const;

export function identityMetadata(user: VerifiedUser | undefined): Record<string, string> {
  if (!user) return {};
  return {
    [METADATA_KEYS.id]: user.id,
    ...(user.email ? { [METADATA_KEYS.email]: user.email } : {}),
    ...(user.name ? { [METADATA_KEYS.name]: user.name } : {}),
  };
}

export function userFromMetadata(metadata: Readonly<Record<string, string>>): VerifiedUser | undefined {
  const id = metadata[METADATA_KEYS.id];
  if (!id) return undefined;
  const email = metadata[METADATA_KEYS.email];
  const name = metadata[METADATA_KEYS.name];
  return { id, ...(email ? { email } : {}), ...(name ? { name } : {}) };
}
