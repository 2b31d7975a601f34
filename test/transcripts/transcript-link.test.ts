/**
 * Transcript links as a teammate and a forger see them: a fresh link opens its conversation,
 * an old one expires, and no edit — to the signature, the expiry or the conversation — opens
 * anything. The clock is injected, never waited on.
 */
import { describe, expect, test } from '@jest/globals';
import { ConfigError } from '../../src/errors/index.js';
import { createTranscriptLinks } from '../../src/transcripts/transcript-link.js';

const SECRET = 'transcript-link-secret-for-tests-0123456789';
const BASE = 'https://assistant.example.test';
const CONVERSATION = 'whatsapp:+447700900123';
const START = Date.UTC(2026, 2, 14, 9, 30);

function clockAt(start: number) {
  let current = start;
  return { now: () => current, advanceHours: (hours: number) => void (current += hours * 3600 * 1000) };
}

/** The link's parts as the router receives them (path decoded, query split). */
function partsOf(link: string) {
  const url = new URL(link);
  const conversationId = decodeURIComponent(url.pathname.replace(/^\/transcripts\//, ''));
  return { conversationId, expires: url.searchParams.get('expires') ?? '', signature: url.searchParams.get('sig') ?? '' };
}

describe('a link', () => {
  test('points at the conversation on the public URL with an expiry and a base64url signature', () => {
    const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: `${BASE}/`, ttlHours: 72, now: () => START });
    const link = links.url(CONVERSATION);
    expect(link).toMatch(new RegExp(`^${BASE}/transcripts/whatsapp%3A%2B447700900123\\?expires=\\d+&sig=[A-Za-z0-9_-]{43}$`));
    const { conversationId, expires, signature } = partsOf(link);
    expect(conversationId).toBe(CONVERSATION);
    expect(Number(expires)).toBe(START / 1000 + 72 * 3600);
    expect(links.verify(conversationId, expires, signature)).toBe('ok');
  });

  test('keeps working until its expiry, then says expired', () => {
    const clock = clockAt(START);
    const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: clock.now });
    const { conversationId, expires, signature } = partsOf(links.url(CONVERSATION));
    clock.advanceHours(71.9);
    expect(links.verify(conversationId, expires, signature)).toBe('ok');
    clock.advanceHours(0.1);
    expect(links.verify(conversationId, expires, signature)).toBe('expired');
  });

  test('built from a fixed issue time (a hand-off opening), it is the same link whenever it is built, valid from that time', () => {
    const clock = clockAt(START);
    const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: clock.now });
    const openedAt = new Date(START - 3600 * 1000);
    const first = links.url(CONVERSATION, openedAt);
    clock.advanceHours(2.5);
    expect(links.url(CONVERSATION, openedAt)).toBe(first);
    const { conversationId, expires, signature } = partsOf(first);
    clock.advanceHours(72 - 3.5 - 0.1);
    expect(links.verify(conversationId, expires, signature)).toBe('ok');
    clock.advanceHours(0.1);
    expect(links.verify(conversationId, expires, signature)).toBe('expired');
  });

  test('opens no other conversation', () => {
    const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => START });
    const { expires, signature } = partsOf(links.url(CONVERSATION));
    for (const other of ['whatsapp:+447700900124', `${CONVERSATION} `, `${CONVERSATION}\n${expires}`, 'web:shop:visitor:chat']) {
      expect(links.verify(other, expires, signature)).toBe('invalid');
    }
  });

  test('conversation ids with reserved characters survive the round trip', () => {
    const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 1, now: () => START });
    const id = 'web:shop/one:visitor?x=1#frag:chat é';
    const parts = partsOf(links.url(id));
    expect(parts.conversationId).toBe(id);
    expect(links.verify(parts.conversationId, parts.expires, parts.signature)).toBe('ok');
  });
});

describe('a forged link', () => {
  const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => START });
  const genuine = partsOf(links.url(CONVERSATION));
  const flip = (character: string) => (character === 'A' ? 'B' : 'A');

  test.each([
    ['a changed last signature character', { signature: genuine.signature.slice(0, -1) + flip(genuine.signature.at(-1)!) }],
    ['a changed first signature character', { signature: flip(genuine.signature[0]!) + genuine.signature.slice(1) }],
    ['a truncated signature', { signature: genuine.signature.slice(0, -1) }],
    ['an empty signature', { signature: '' }],
    ['a later expiry', { expires: String(Number(genuine.expires) + 3600) }],
    ['an expiry with a leading zero', { expires: `0${genuine.expires}` }],
    ['a non-numeric expiry', { expires: `${genuine.expires}.0` }],
  ])('with %s is invalid', (_name, change) => {
    const forged = { ...genuine, ...change };
    expect(links.verify(forged.conversationId, forged.expires, forged.signature)).toBe('invalid');
  });

  test('signed with another secret is invalid', () => {
    const other = createTranscriptLinks({ secret: `${SECRET}-other`, publicBaseUrl: BASE, ttlHours: 72, now: () => START });
    const forged = partsOf(other.url(CONVERSATION));
    expect(links.verify(forged.conversationId, forged.expires, forged.signature)).toBe('invalid');
  });

  test('that has also expired says invalid, not expired', () => {
    const later = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => START + 100 * 3600 * 1000 });
    expect(later.verify(CONVERSATION, genuine.expires, genuine.signature)).toBe('expired');
    expect(later.verify(CONVERSATION, String(Number(genuine.expires) - 1), genuine.signature)).toBe('invalid');
  });
});

test('settings are checked when the links are created', () => {
  expect(() => createTranscriptLinks({ secret: 'too-short', publicBaseUrl: BASE, ttlHours: 72 })).toThrow(ConfigError);
  expect(() => createTranscriptLinks({ secret: SECRET, publicBaseUrl: 'not a url', ttlHours: 72 })).toThrow(ConfigError);
  expect(() => createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 0 })).toThrow(ConfigError);
});

describe('a media link (a held conversation relayed to a teammate)', () => {
  const MEDIA = '0123456789abcdef01234567';
  const mediaParts = (link: string) => {
    const url = new URL(link);
    const match = /^\/transcripts\/([^/]+)\/media\/([^/]+)$/.exec(url.pathname);
    return {
      conversationId: decodeURIComponent(match?.[1] ?? ''),
      mediaId: decodeURIComponent(match?.[2] ?? ''),
      expires: url.searchParams.get('expires') ?? '',
      signature: url.searchParams.get('sig') ?? '',
    };
  };

  test('opens that one file of that conversation until it expires, and never the transcript', () => {
    const clock = clockAt(START);
    const links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: clock.now });
    const link = links.mediaUrl(CONVERSATION, MEDIA, 60 * 60 * 1000);
    expect(link).toMatch(new RegExp(`^${BASE}/transcripts/whatsapp%3A%2B447700900123/media/${MEDIA}\\?expires=\\d+&sig=[A-Za-z0-9_-]{43}$`));
    const { conversationId, mediaId, expires, signature } = mediaParts(link);
    expect(Number(expires)).toBe(START / 1000 + 3600);
    expect(links.verifyMedia(conversationId, mediaId, expires, signature)).toBe('ok');
    // Not the transcript, not another file, not another conversation.
    expect(links.verify(conversationId, expires, signature)).toBe('invalid');
    expect(links.verifyMedia(conversationId, 'fedcba9876543210fedcba98', expires, signature)).toBe('invalid');
    expect(links.verifyMedia('whatsapp:+447700900999', mediaId, expires, signature)).toBe('invalid');
    // A transcript link's signature does not open a file by the media route's own check.
    const page = partsOf(links.url(CONVERSATION));
    expect(links.verifyMedia(CONVERSATION, MEDIA, page.expires, page.signature)).toBe('invalid');
    clock.advanceHours(1);
    expect(links.verifyMedia(conversationId, mediaId, expires, signature)).toBe('expired');
  });
});
