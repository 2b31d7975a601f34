/**
 * The inbound webhook as Twilio and attackers see it: signature checks (including behind a
 * proxy), malformed and oversized bodies, and retries of the same MessageSid.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, jest, test } from '@jest/globals';
import twilio from 'twilio';
import { redisKeys } from '../../src/queue/keys.js';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { eventually, newMessageSid, PUBLIC_BASE_URL, startHarness, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, TEST_SENDER, type Harness } from '../support/harness.js';
import { consoleCalls } from '../support/console-guard.js';
import { inboundWhatsappParams, signTwilioRequest } from '../support/twilio-signature.js';

const CUSTOMER = 'whatsapp:+34600111222';

function params(overrides: Record<string, string> = {}) {
  return {
    ...inboundWhatsappParams({ accountSid: TEST_ACCOUNT_SID, from: CUSTOMER, to: TEST_SENDER, body: 'Hola', messageSid: newMessageSid() }),
    ...overrides,
  };
}

describe('POST /webhooks/whatsapp without a worker', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ worker: false });
  });
  afterAll(() => harness.close());
  beforeEach(() => {
    harness.logs.splice(0);
  });

  const inboxLength = () => harness.services.redis.llen(redisKeys.inbox(conversationKeyFor(CUSTOMER)));

  test('a correctly signed message is acknowledged with empty TwiML and queued', async () => {
    const before = await inboxLength();
    const response = await harness.sendWhatsapp({ from: CUSTOMER, body: 'Hola' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/xml/);
    expect(response.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
    expect(await inboxLength()).toBe(before + 1);
    expect(await harness.services.queue.getJobCounts('waiting')).toEqual({ waiting: expect.any(Number) });
  });

  test('a missing signature is refused with 403 and nothing is queued', async () => {
    const before = await inboxLength();
    const response = await harness.http.post('/webhooks/whatsapp').type('form').send(params());
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: 'missing X-Twilio-Signature header' });
    expect(await inboxLength()).toBe(before);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'webhook-rejected', reason: 'signature-missing' }));
  });

  test.each([
    ['signed with another token', (body: Record<string, string>) => signTwilioRequest('f'.repeat(32), `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body)],
    ['signed for another URL', (body: Record<string, string>) => signTwilioRequest(TEST_AUTH_TOKEN, 'https://evil.example/webhooks/whatsapp', body)],
    [
      'signed over other parameters',
      (body: Record<string, string>) => signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, { ...body, Body: 'something else' }),
    ],
    ['a garbage signature', () => 'not-a-signature'],
  ])('%s is refused with 403 and nothing is queued', async (_name, sign) => {
    const before = await inboxLength();
    const body = params();
    const response = await harness.http.post('/webhooks/whatsapp').type('form').set('X-Twilio-Signature', sign(body)).send(body);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: 'invalid X-Twilio-Signature' });
    expect(JSON.stringify(response.body)).not.toContain(signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body));
    expect(await inboxLength()).toBe(before);
  });

  test('forwarded headers are ignored unless TRUST_PROXY is set', async () => {
    const body = params();
    const response = await harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'proxy.example.org')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, 'https://proxy.example.org/webhooks/whatsapp', body))
      .send(body);
    expect(response.status).toBe(403);
  });

  test('a signed but malformed message gets 400 naming the field', async () => {
    const body = params({ From: 'whatsapp:not-a-number' });
    const response = await harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body))
      .send(body);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/^From: expected whatsapp:\+<E\.164 number>/);
  });

  test('a message from another Twilio account is refused', async () => {
    const body = params({ AccountSid: `AC${'b2'.repeat(16)}` });
    const response = await harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body))
      .send(body);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: 'AccountSid does not match this service' });
  });

  test('a signed message to another sender of the same account is refused with 403, logged and counted, and not queued', async () => {
    const before = await inboxLength();
    const body = params({ To: 'whatsapp:+14155550199' });
    const response = await harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body))
      .send(body);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: "To is not this service's WhatsApp sender" });
    expect(await inboxLength()).toBe(before);
    expect(harness.logs).toContainEqual(
      expect.objectContaining({ level: 'warn', event: 'webhook-rejected', reason: 'to-mismatch', to: harness.logId('whatsapp:+14155550199') }),
    );
    expect(harness.services.metrics.value('webhook_rejected_total', { kind: 'inbound', reason: 'to_mismatch' })).toBe(1);
  });

  test('a signature-settings header naming an unknown algorithm is refused with 403 and prints nothing', async () => {
    const stderr = jest.spyOn(process.stderr, 'write');
    try {
      const body = params();
      const response = await harness.http
        .post('/webhooks/whatsapp')
        .type('form')
        .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body))
        .set('X-Twilio-Webhooks-Signature-Settings', 'algorithm=HMAC_MD5 [Twilio]: attacker-chosen text')
        .send(body);
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ error: 'unsupported signature algorithm in X-Twilio-Webhooks-Signature-Settings' });
      expect(stderr).not.toHaveBeenCalled();
      // The console guard fails this test on any console call; say so explicitly too.
      expect(consoleCalls()).toEqual([]);
      expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'webhook-rejected', reason: 'signature-algorithm' }));
    } finally {
      stderr.mockRestore();
    }
  });

  test('a webhook signed with HMAC-SHA256, as its signature-settings header says, is accepted', async () => {
    const body = params();
    const response = await harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Twilio-Signature', twilio.getExpectedTwilioSignature(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body, 'HMAC_SHA256'))
      .set('X-Twilio-Webhooks-Signature-Settings', 'key=webhooks_sharedkey_test,algorithm=HMAC_SHA256')
      .send(body);
    expect(response.status).toBe(200);
  });

  test('a JSON body gets 415', async () => {
    const response = await harness.http.post('/webhooks/whatsapp').send({ Body: 'hi' });
    expect(response.status).toBe(415);
  });

  test('an oversized body gets 413 and a log line, never a 500', async () => {
    const body = params({ Body: 'x'.repeat(70 * 1024) });
    const response = await harness.http.post('/webhooks/whatsapp').type('form').set('X-Twilio-Signature', 'x').send(body);
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: 'request body too large' });
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'request-rejected', status: 413 }));
  });

  test("a body over WhatsApp's 4,096 characters is refused with 400", async () => {
    const body = params({ Body: 'y'.repeat(5000) });
    const response = await harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, body))
      .send(body);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('Body: Body exceeds 4096 characters');
  });

  test('a Twilio retry of the same MessageSid queues nothing new', async () => {
    const messageSid = newMessageSid();
    const before = await inboxLength();
    const first = await harness.sendWhatsapp({ from: CUSTOMER, body: 'Hola', messageSid });
    const retry = await harness.sendWhatsapp({ from: CUSTOMER, body: 'Hola', messageSid });
    expect([first.status, retry.status]).toEqual([200, 200]);
    expect(await inboxLength()).toBe(before + 1);
    expect(harness.logs.filter((line) => line.event === 'inbound-duplicate')).toHaveLength(1);
  });

  test('unknown routes get 404 JSON', async () => {
    const response = await harness.http.get('/nope');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'no route for GET /nope' });
  });
});

describe('behind a trusted proxy', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ worker: false, env: { TRUST_PROXY: 'true' } });
  });
  afterAll(() => harness.close());

  test('the URL Twilio called is rebuilt from X-Forwarded-Proto/Host/Port', async () => {
    const body = params();
    const response = await harness.http
      .post('/webhooks/whatsapp?source=twilio')
      .type('form')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'chat.example.org')
      .set('X-Forwarded-Port', '8443')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, 'https://chat.example.org:8443/webhooks/whatsapp?source=twilio', body))
      .send(body);
    expect(response.status).toBe(200);
    await eventually(async () => (await harness.services.redis.exists(redisKeys.inbox(conversationKeyFor(CUSTOMER)))) === 1);
  });
});

describe('behind proxies named by address', () => {
  const forwarded = (harness: Harness, body: Record<string, string>, signedUrl: string) =>
    harness.http
      .post('/webhooks/whatsapp')
      .type('form')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'attacker.example.org')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, signedUrl, body))
      .send(body);

  describe('when the client is not one of them', () => {
    let harness: Harness;
    beforeAll(async () => {
      // The test client connects from loopback, which this list does not name.
      harness = await startHarness({ worker: false, env: { TRUST_PROXY: '10.20.30.40,192.168.77.0/24' } });
    });
    afterAll(() => harness.close());

    test('its X-Forwarded-Host/Proto do not choose the URL the signature is checked against', async () => {
      const response = await forwarded(harness, params(), 'https://attacker.example.org/webhooks/whatsapp');
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ error: 'invalid X-Twilio-Signature' });
    });

    test('a request signed for PUBLIC_BASE_URL is accepted whatever forwarded headers it carries', async () => {
      const response = await forwarded(harness, params(), `${PUBLIC_BASE_URL}/webhooks/whatsapp`);
      expect(response.status).toBe(200);
    });
  });

  test('when the client is one of them, its forwarded headers say which URL Twilio called', async () => {
    const harness = await startHarness({ worker: false, env: { TRUST_PROXY: '10.20.30.40,loopback' } });
    try {
      expect((await forwarded(harness, params(), 'https://attacker.example.org/webhooks/whatsapp')).status).toBe(200);
      expect((await forwarded(harness, params(), `${PUBLIC_BASE_URL}/webhooks/whatsapp`)).status).toBe(403);
    } finally {
      await harness.close();
    }
  });
});
