/**
 * Website-verified visitors, attacked as a visitor would: the site's backend signs its
 * signed-in user with the site's identity secret; the widget passes id, hash (and optionally
 * email and name) on /session. Only a right signature binds the user into the visitor token,
 * and the web channel's identify() — what the runtime scopes customer data by — names the
 * contact holding that external id or email. A forged, partial or unsigned identity leaves the
 * visitor as they were (anonymous, or the user their token already names) and is logged.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { InboundMessage, TurnInput } from '../../src/contracts/index.js';
import { callerFor } from '../../src/tools/caller.js';
import { startHarness, type Harness } from '../support/harness.js';

const SHOP = 'https://shop.example.test';
const SECRET = 'shop-identity-secret-0123456789abcdef';
const SITES = JSON.stringify([
  { key: 'test-site', name: 'Harbour Lane', origins: [SHOP], identitySecret: SECRET },
  { key: 'plain-site', name: 'No Identity', origins: ['https://plain.example.test'] },
]);

type User = { id: string; email?: string; name?: string };
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What the site's backend computes for a page view, written out as docs/widget.md tells a site developer. */
function signed(user: User, options: { secret?: string; ts?: number } = {}): User & { ts: string; hash: string } {
  const ts = String(options.ts ?? nowSeconds());
  const payload = [user.id, user.email ?? '', user.name ?? '', ts].join('\n');
  return {
    ...user,
    ts,
    hash: createHmac('sha256', options.secret ?? SECRET)
      .update(payload)
      .digest('hex'),
  };
}

/** The form before issue times (accepted only with WEB_IDENTITY_LEGACY=true). */
function signedLegacy(user: User): User & { hash: string } {
  const payload = [user.id, user.email ?? '', user.name ?? ''].join('\n').replace(/\n+$/, '');
  return { ...user, hash: createHmac('sha256', SECRET).update(payload).digest('hex') };
}

let harness: Harness;
let counter = 0;
beforeAll(async () => {
  harness = await startHarness({ env: { WEB_SITES: SITES }, worker: false });
  await harness.services.contacts.upsert({
    address: 'whatsapp:+14155550123',
    name: 'Amelia Hart',
    email: 'amelia@harbour.example',
    externalId: 'u-amelia',
    customerId: 'CUS-1042',
    entities: [{ id: 'acct-77', name: 'Harbour Lane Bakery' }],
  });
  await harness.services.contacts.upsert({
    address: 'user:u-bob',
    name: 'Bob Stone',
    email: 'Bob@Dockside.example',
    entities: [{ id: 'acct-9', name: 'Dockside' }],
  });
});
afterAll(async () => {
  await harness.close();
});

async function session(body: Record<string, unknown>, origin = SHOP) {
  const response = await harness.http
    .post('/api/widget/session')
    .set('Origin', origin)
    .send({ siteKey: 'test-site', ...body });
  expect(response.status).toBe(200);
  return response.body as { token: string; visitorId: string; conversationId: string };
}

/** Posts a message and returns it as the worker will take it from the conversation's inbox. */
async function inboundOf(started: { token: string; conversationId: string }, extra: Record<string, unknown> = {}): Promise<InboundMessage> {
  const response = await harness.http
    .post('/api/widget/messages')
    .set('Origin', SHOP)
    .set('Authorization', `Bearer ${started.token}`)
    .send({ clientMessageId: `client-message-${++counter}`, text: 'show my invoices', ...extra });
  expect(response.status).toBe(202);
  const batch = await harness.services.inbox.batch(started.conversationId, 1);
  if (!batch) throw new Error('the message is not in the inbox');
  await harness.services.inbox.acknowledge(started.conversationId, batch);
  return batch.entries[0].message;
}

const identify = (inbound: InboundMessage) => harness.services.channels.get('web')!.identify!(inbound);
const rejections = () => harness.logs.filter((line) => line.event === 'widget-identity-rejected');

describe('verified visitors', () => {
  test('a right hash binds the user: the web channel identifies the contact holding that external id', async () => {
    const user = { id: 'u-amelia', name: 'Amelia' };
    const started = await session({ user: signed(user) });
    expect(await identify(await inboundOf(started))).toEqual({
      name: 'Amelia Hart',
      email: 'amelia@harbour.example',
      customerId: 'CUS-1042',
      entities: [{ id: 'acct-77', name: 'Harbour Lane Bakery' }],
    });
  });

  test('a signed email finds the contact holding that email (any case); a web-only contact is found by its user: address', async () => {
    const byEmail = { id: 'site-user-314', email: 'AMELIA@harbour.example' };
    expect((await identify(await inboundOf(await session({ user: signed(byEmail) }))))?.name).toBe('Amelia Hart');
    const bob = { id: 'u-bob' };
    expect((await identify(await inboundOf(await session({ user: signed(bob) }))))?.entities).toEqual([{ id: 'acct-9', name: 'Dockside' }]);
  });

  test("the web channel's grounding names the verified contact's companies, and an anonymous visitor has none", async () => {
    const user = { id: 'u-amelia' };
    const web = harness.services.channels.get('web')!;
    const grounding = async (inbound: InboundMessage) =>
      (await web.grounding({ inbound } as TurnInput, {}, callerFor(await web.identify!(inbound), {}))).find((source) => source.label === 'Account')?.text;
    expect(await grounding(await inboundOf(await session({ user: signed(user) })))).toContain('Harbour Lane Bakery (acct-77)');
    expect(await grounding(await inboundOf(await session({})))).toMatch(/not signed in/);
  });

  test('a verified user no contact holds is identified as nobody', async () => {
    const stranger = { id: 'u-stranger', email: 'stranger@example.test' };
    expect(await identify(await inboundOf(await session({ user: signed(stranger) })))).toBeUndefined();
  });
});

describe('forged identity', () => {
  test.each([
    ['a hash signed with another secret', signed({ id: 'u-amelia' }, { secret: 'another-secret-entirely-0123456789' }), 'bad_hash'],
    ["another user's hash", { ...signed({ id: 'u-bob' }), id: 'u-amelia' }, 'bad_hash'],
    ['an email the signature does not cover', { ...signed({ id: 'u-stranger' }), email: 'amelia@harbour.example' }, 'bad_hash'],
    [
      'an issue time the signature does not cover (a leaked hash made young again)',
      { ...signed({ id: 'u-amelia' }, { ts: nowSeconds() - 7200 }), ts: String(nowSeconds()) },
      'bad_hash',
    ],
    ['a hash older than WEB_IDENTITY_MAX_AGE_SECONDS (a leaked one)', signed({ id: 'u-amelia' }, { ts: nowSeconds() - 3600 - 120 }), 'expired'],
    ['an issue time well ahead of the clock', signed({ id: 'u-amelia' }, { ts: nowSeconds() + 3600 }), 'issued_in_future'],
    ['the form without an issue time, while WEB_IDENTITY_LEGACY is off', signedLegacy({ id: 'u-amelia' }), 'no_issue_time'],
    ['an issue time that is not whole seconds', { ...signed({ id: 'u-amelia' }), ts: '2026-12-01T10:00:00Z' }, 'malformed'],
    ['no hash', { id: 'u-amelia' }, 'malformed'],
    ['a hash that is not hex', { id: 'u-amelia', hash: 'z'.repeat(64) }, 'malformed'],
    ['an identity that is not an object', 'u-amelia', 'malformed'],
  ])('%s leaves the visitor anonymous, and is logged', async (_name, user, reason) => {
    const before = rejections().length;
    const started = await session({ user });
    expect(await identify(await inboundOf(started))).toBeUndefined();
    expect(rejections().slice(before)).toEqual([expect.objectContaining({ level: 'warn', siteKey: 'test-site', reason })]);
  });

  test('a site without an identity secret trusts no identity', async () => {
    const user = { id: 'u-amelia' };
    const response = await harness.http
      .post('/api/widget/session')
      .set('Origin', 'https://plain.example.test')
      .send({ siteKey: 'plain-site', user: signed(user) });
    expect(response.status).toBe(200);
    expect(rejections().at(-1)).toMatchObject({ siteKey: 'plain-site', reason: 'not_configured' });
    const inbound = await harness.http
      .post('/api/widget/messages')
      .set('Origin', 'https://plain.example.test')
      .set('Authorization', `Bearer ${response.body.token as string}`)
      .send({ clientMessageId: `client-message-${++counter}`, text: 'hi' });
    expect(inbound.status).toBe(202);
    const batch = await harness.services.inbox.batch(response.body.conversationId as string, 1);
    expect(await identify(batch!.entries[0].message)).toBeUndefined();
  });

  test('fields a message sends of its own can never name the user', async () => {
    const started = await session({});
    const inbound = await inboundOf(started, {
      verifiedUserId: 'u-amelia',
      metadata: { verifiedUserId: 'u-amelia', verifiedUserEmail: 'amelia@harbour.example' },
      user: signed({ id: 'u-amelia' }),
      page: { url: 'https://shop.example.test/account', title: 'Account', verifiedUserId: 'u-amelia' },
    });
    expect(Object.keys(inbound.metadata).sort()).toEqual(['pageTitle', 'pageUrl', 'siteKey', 'siteName']);
    expect(await identify(inbound)).toBeUndefined();
  });
});

describe('a verified visitor later on', () => {
  test('a renewal keeps the verified user only on a page naming that user; a page signed in as nobody or somebody else gets a fresh visitor', async () => {
    const amelia = { id: 'u-amelia' };
    const first = await session({ user: signed(amelia) });

    // The same user with a hash that no longer verifies (a page left open): still theirs.
    const stale = await session({ token: first.token, user: signed(amelia, { ts: nowSeconds() - 2 * 3600 }) });
    expect(stale.conversationId).toBe(first.conversationId);
    expect((await identify(await inboundOf(stale)))?.name).toBe('Amelia Hart');

    // Signed out: the page names nobody, and never gets Amelia's chat back.
    const signedOut = await session({ token: first.token });
    expect(signedOut.visitorId).not.toBe(first.visitorId);
    expect(signedOut.conversationId).not.toBe(first.conversationId);
    expect(await identify(await inboundOf(signedOut))).toBeUndefined();
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'widget-identity-switched', signedOut: true }));

    // A forged other user neither gets Amelia's chat nor becomes Bob.
    const forged = await session({ token: first.token, user: signed({ id: 'u-bob' }, { secret: 'wrong-secret-0123456789-0123456789' }) });
    expect(forged.conversationId).not.toBe(first.conversationId);
    expect(await identify(await inboundOf(forged))).toBeUndefined();

    const bob = { id: 'u-bob' };
    const switched = await session({ token: first.token, user: signed(bob) });
    expect(switched.visitorId).not.toBe(first.visitorId);
    expect(switched.conversationId).not.toBe(first.conversationId);
    expect((await identify(await inboundOf(switched)))?.name).toBe('Bob Stone');
  });

  test('an anonymous visitor who signs in keeps their chat, now verified; a new chat stays verified', async () => {
    const anonymous = await session({});
    expect(await identify(await inboundOf(anonymous))).toBeUndefined();
    const amelia = { id: 'u-amelia' };
    const signedIn = await session({ token: anonymous.token, user: signed(amelia) });
    expect(signedIn.conversationId).toBe(anonymous.conversationId);
    expect((await identify(await inboundOf(signedIn)))?.name).toBe('Amelia Hart');

    const fresh = await harness.http.post('/api/widget/new-chat').set('Origin', SHOP).set('Authorization', `Bearer ${signedIn.token}`);
    expect(fresh.status).toBe(200);
    expect((await identify(await inboundOf(fresh.body as { token: string; conversationId: string })))?.name).toBe('Amelia Hart');
  });
});

describe('issue times', () => {
  test('a hash issued within WEB_IDENTITY_MAX_AGE_SECONDS (default an hour) binds the user', async () => {
    const user = { id: 'u-amelia' };
    const started = await session({ user: signed(user, { ts: nowSeconds() - 3600 + 120 }) });
    expect((await identify(await inboundOf(started)))?.name).toBe('Amelia Hart');
  });

  test('an expired hash on a renewal keeps the user the token already names (a page left open past the window)', async () => {
    const amelia = { id: 'u-amelia' };
    const first = await session({ user: signed(amelia) });
    const renewed = await session({ token: first.token, user: signed(amelia, { ts: nowSeconds() - 2 * 3600 }) });
    expect(renewed.conversationId).toBe(first.conversationId);
    expect((await identify(await inboundOf(renewed)))?.name).toBe('Amelia Hart');
  });

  test('with WEB_IDENTITY_LEGACY=true the form without an issue time is still accepted, logged and counted as legacy', async () => {
    const legacy = await startHarness({ env: { WEB_SITES: SITES, WEB_IDENTITY_LEGACY: 'true', WEB_IDENTITY_MAX_AGE_SECONDS: '600' }, worker: false });
    try {
      const start = (user: unknown) => legacy.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'test-site', user });
      expect((await start(signedLegacy({ id: 'u-amelia', name: 'Amelia' }))).status).toBe(200);
      expect(legacy.services.metrics.value('widget_identity_total', { outcome: 'verified_legacy' })).toBe(1);
      expect(legacy.logs).toContainEqual(expect.objectContaining({ event: 'widget-identity-legacy', siteKey: 'test-site' }));
      // The timed form works beside it, with the configured window.
      expect((await start(signed({ id: 'u-amelia' }, { ts: nowSeconds() - 300 }))).status).toBe(200);
      expect(legacy.services.metrics.value('widget_identity_total', { outcome: 'verified' })).toBe(1);
      await start(signed({ id: 'u-amelia' }, { ts: nowSeconds() - 900 }));
      expect(legacy.services.metrics.value('widget_identity_total', { outcome: 'expired' })).toBe(1);
    } finally {
      await legacy.close();
    }
  });
});
