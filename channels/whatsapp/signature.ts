/**
 * Verifies Twilio's request signature. Twilio signs the exact public URL it called, so the URL
 * is rebuilt from PUBLIC_BASE_URL and the request's path and query — or, only when the
 * operator trusts their proxy and the request came from it, from its X-Forwarded-Proto/Host/Port
 * headers. "From it" is Express's own `trust proxy` test of the connection's peer (the
 * addresses or hop count TRUST_PROXY gives): with TRUST_PROXY naming proxy addresses, a client
 * connecting from anywhere else never chooses the URL the signature is checked against. The algorithm a
 * request names (X-Twilio-Webhooks-Signature-Settings) is checked here first: the twilio
 * library prints an unsupported one to the console, and that text is the caller's.
 */
import type { Request } from 'express';
import twilio from 'twilio';

export interface SignatureSettings {
  authToken: string;
  publicBaseUrl: string;
  trustProxy: boolean;
}

function firstHeaderValue(value: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  return raw?.split(',')[0]?.trim() || undefined;
}

/** Whether the connection's peer is a proxy `trust proxy` names (a hop count trusts the nearest hop, whoever it is). */
function fromTrustedProxy(request: Request): boolean {
  const trust = request.app.get('trust proxy fn') as ((address: string | undefined, hop: number) => boolean) | undefined;
  return typeof trust === 'function' && trust(request.socket.remoteAddress, 0);
}

/** The URL Twilio called, as it computed the signature over it. */
function publicRequestUrl(request: Request, settings: SignatureSettings): string {
  const base = new URL(settings.publicBaseUrl);
  if (settings.trustProxy && fromTrustedProxy(request)) {
    const host = firstHeaderValue(request.headers['x-forwarded-host']) ?? request.headers.host;
    const proto = firstHeaderValue(request.headers['x-forwarded-proto']);
    const port = firstHeaderValue(request.headers['x-forwarded-port']);
    if (proto) base.protocol = `${proto}:`;
    if (host) base.host = host;
    if (port && host && !host.includes(':')) base.port = port;
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  return `${base.origin}${prefix}${request.originalUrl}`;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'mismatch' | 'algorithm' };

const SUPPORTED_ALGORITHMS: ReadonlySet<string> = new Set([twilio.HMAC_SHA1, twilio.HMAC_SHA256]);

export function verifyTwilioSignature(request: Request, params: Record<string, string>, settings: SignatureSettings): SignatureCheck {
  const signature = request.get('x-twilio-signature');
  if (!signature) return { ok: false, reason: 'missing' };
  const url = publicRequestUrl(request, settings);
  const algorithm = twilio.getSignatureAlgorithm(request.get('x-twilio-webhooks-signature-settings')).toUpperCase();
  if (!SUPPORTED_ALGORITHMS.has(algorithm)) return { ok: false, reason: 'algorithm' };
  return twilio.validateRequest(settings.authToken, signature, url, params, algorithm) ? { ok: true } : { ok: false, reason: 'mismatch' };
}
