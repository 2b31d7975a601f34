/**
 * Website-verified visitor identity, as Intercom's and Chatwoot's identity verification work:
 * the site's backend signs the signed-in user with the site's `identitySecret` and the page
 * passes the result on the widget's script tag; the widget forwards it on `/session`.
 *
 *   data-user-ts   = the time the page was rendered, whole seconds since the Unix epoch
 *   data-user-hash = hex(HMAC-SHA256(identitySecret, payload))
 *   payload        = [userId, email ?? '', name ?? '', ts].join('\n')
 *
 * Every field the page passes is covered: an email or name the signature does not cover makes
 * the whole identity untrusted. The issue time is too, and a hash is accepted only within
 * WEB_IDENTITY_MAX_AGE_SECONDS of it (and at most FUTURE_SKEW_SECONDS ahead of this server's
 * clock), so a hash that leaks (a cached page, a log, a shared screenshot of the markup) stops
 * working. The form before issue times — no `data-user-ts`, payload `[userId, email, name]` with
 * trailing '\n's removed — never expires, so it is accepted only while WEB_IDENTITY_LEGACY is on.
 * The two payloads can never be mistaken for each other: no field may hold a line break, and the
 * timed one always has four lines. The hash is compared in constant time. This module only says
 * whether the identity is genuine; it never decides what a verified user may see.
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
  /** `data-user-ts`: whole seconds since the epoch, as the page carries it (text). */
  ts: z
    .string()
    .regex(/^\d{1,12}$/, 'expected whole seconds since the Unix epoch')
    .optional(),
});

/** How far ahead of this server's clock an issue time may be (the site's server clock runs a little fast). */
const FUTURE_SKEW_SECONDS = 300;

export interface IdentityPolicy {
  /** WEB_IDENTITY_MAX_AGE_SECONDS: how long after its issue time a hash is accepted. */
  maxAgeSeconds: number;
  /** WEB_IDENTITY_LEGACY: whether a hash without an issue time (which never expires) is accepted. */
  legacy: boolean;
  /** The current time, ms (tests pass their own). */
  now?: number;
}

export type IdentityCheck =
  | { status: 'none' }
  | { status: 'verified'; user: VerifiedUser; legacy: boolean }
  | { status: 'rejected'; reason: 'not_configured' | 'malformed' | 'bad_hash' | 'expired' | 'issued_in_future' | 'no_issue_time' };

/** The string a site signs for a user: the fields and the issue time joined by newlines. */
function identityPayload(user: VerifiedUser, ts: string): string {
  return [user.id, user.email ?? '', user.name ?? '', ts].join('\n');
}

/** The form before issue times (WEB_IDENTITY_LEGACY): the fields joined by newlines, trailing empty ones dropped. */
function legacyIdentityPayload(user: VerifiedUser): string {
  return [user.id, user.email ?? '', user.name ?? ''].join('\n').replace(/\n+$/, '');
}

export function verifyVisitorIdentity(site: Site, claimed: unknown, policy: IdentityPolicy): IdentityCheck {
  if (claimed === undefined || claimed === null) return { status: 'none' };
  if (!site.identitySecret) return { status: 'rejected', reason: 'not_configured' };
  const parsed = ClaimedUserSchema.safeParse(claimed);
  if (!parsed.success) return { status: 'rejected', reason: 'malformed' };
  const { hash, ts, ...fields } = parsed.data;
  const user: VerifiedUser = { id: fields.id, ...(fields.email ? { email: fields.email } : {}), ...(fields.name ? { name: fields.name } : {}) };
  if (ts === undefined && !policy.legacy) return { status: 'rejected', reason: 'no_issue_time' };
  const payload = ts === undefined ? legacyIdentityPayload(user) : identityPayload(user, ts);
  const expected = createHmac('sha256', site.identitySecret).update(payload).digest();
  const given = Buffer.from(hash, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { status: 'rejected', reason: 'bad_hash' };
  if (ts !== undefined) {
    const nowSeconds = Math.floor((policy.now ?? Date.now()) / 1000);
    const issued = Number(ts);
    if (issued > nowSeconds + FUTURE_SKEW_SECONDS) return { status: 'rejected', reason: 'issued_in_future' };
    if (nowSeconds - issued > policy.maxAgeSeconds) return { status: 'rejected', reason: 'expired' };
  }
  return { status: 'verified', user, legacy: ts === undefined };
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
