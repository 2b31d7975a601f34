// Self-test of test/support/fake-twilio.ts: the real twilio library, with a custom httpClient
// that sends every Twilio host to the fake's base URL, creates WhatsApp messages, sends typing
// indicators, sees injected failures as RestExceptions, and is refused with bad credentials.
import twilio from 'twilio';
import { createTwilioClient } from '../../channels/whatsapp/twilio-client.js';
import { startFakeTwilio, type FakeTwilio } from '../support/fake-twilio.js';

type TwilioRequestOptions = Parameters<twilio.RequestClient['request']>[0];
type TwilioResponse = Awaited<ReturnType<twilio.RequestClient['request']>>;

/** Sends the twilio library's requests to one local base URL, keeping path and query. */
class LocalTwilioHttpClient extends twilio.RequestClient {
  readonly baseUrl: string;

  constructor(baseUrl: string) {
    super();
    this.baseUrl = baseUrl;
  }

  override async request<TData>(options: TwilioRequestOptions): Promise<TwilioResponse & { body: TData }> {
    const original = new URL(options.uri);
    const target = new URL(original.pathname + original.search, this.baseUrl);
    if (options.params !== undefined) {
      for (const [name, value] of Object.entries(options.params)) appendFormValue(target.searchParams, name, value);
    }
    const headers: Record<string, string> = { ...options.headers };
    if (options.username !== undefined && options.password !== undefined) {
      headers.Authorization = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
    } else if (options.authStrategy !== undefined) {
      headers.Authorization = await options.authStrategy.getAuthString();
    }
    let body: string | undefined;
    if (options.data !== undefined && options.data !== null) {
      const form = new URLSearchParams();
      for (const [name, value] of Object.entries(options.data)) appendFormValue(form, name, value);
      body = form.toString();
    }
    const response = await fetch(target, { method: options.method.toUpperCase(), headers, body });
    return {
      statusCode: response.status,
      body: (await response.text()) as TData,
      headers: Object.fromEntries(response.headers),
      toString: () => `[HTTP ${response.status}]`,
    };
  }
}

function appendFormValue(form: URLSearchParams, name: string, value: unknown): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) form.append(name, String(item));
    return;
  }
  form.append(name, value instanceof Date ? value.toISOString() : String(value));
}

const accountSid = 'AC' + 'f'.repeat(32);
const authToken = 'fake-auth-token';

describe('fake Twilio', () => {
  let fake: FakeTwilio;
  let client: twilio.Twilio;

  beforeAll(async () => {
    fake = await startFakeTwilio({ accountSid, authToken });
    client = twilio(accountSid, authToken, { httpClient: new LocalTwilioHttpClient(fake.baseUrl) });
  });

  afterEach(() => fake.reset());

  afterAll(async () => {
    await fake.close();
  });

  test('records a WhatsApp message created by the real twilio library and answers like Twilio', async () => {
    const created = await client.messages.create({
      to: 'whatsapp:+15551234567',
      from: 'whatsapp:+14155238886',
      body: 'Hello from the assistant',
      statusCallback: 'https://assistant.example/webhooks/twilio/status',
    });
    expect(created.sid).toMatch(/^SM[0-9a-f]{32}$/);
    expect(created.status).toBe('queued');
    expect(created.accountSid).toBe(accountSid);
    expect(created.direction).toBe('outbound-api');
    expect(created.dateCreated).toBeInstanceOf(Date);
    expect(Number.isNaN(created.dateCreated.getTime())).toBe(false);
    expect(created.body).toBe('Hello from the assistant');

    const [message] = await fake.waitForMessages(1, 1_000);
    expect(message).toMatchObject({
      sid: created.sid,
      to: 'whatsapp:+15551234567',
      from: 'whatsapp:+14155238886',
      body: 'Hello from the assistant',
      statusCallback: 'https://assistant.example/webhooks/twilio/status',
    });
    expect(message?.params.StatusCallback).toBe('https://assistant.example/webhooks/twilio/status');
    expect(typeof message?.receivedAtHrtime).toBe('bigint');

    const fetched = await client.messages(created.sid).fetch();
    expect(fetched.sid).toBe(created.sid);
  });

  test('records content templates and media URLs', async () => {
    await client.messages.create({
      to: 'whatsapp:+15551234567',
      from: 'whatsapp:+14155238886',
      contentSid: 'HX' + '0'.repeat(32),
      contentVariables: JSON.stringify({ 1: 'Ada' }),
    });
    await client.messages.create({
      to: 'whatsapp:+15551234567',
      from: 'whatsapp:+14155238886',
      mediaUrl: ['https://assistant.example/a.png', 'https://assistant.example/b.png'],
    });
    const [template, media] = fake.messages;
    expect(template?.contentSid).toBe('HX' + '0'.repeat(32));
    expect(JSON.parse(template?.contentVariables ?? '{}')).toEqual({ 1: 'Ada' });
    expect(media?.mediaUrls).toEqual(['https://assistant.example/a.png', 'https://assistant.example/b.png']);
    expect(media?.sid).toMatch(/^MM/);
  });

  test('answers the WhatsApp typing indicator at the path the library uses', async () => {
    const indicator = await client.messaging.v2.typingIndicator.create({ channel: 'whatsapp', messageId: 'SM' + '1'.repeat(32) });
    expect(indicator.success).toBe(true);
    expect(fake.typingIndicators).toHaveLength(1);
    expect(fake.typingIndicators[0]).toMatchObject({ channel: 'whatsapp', messageId: 'SM' + '1'.repeat(32) });
    expect(fake.requests[0]?.path).toBe('/v2/Indicators/Typing.json');
  });

  test('failNext makes the next creates fail with Twilio error JSON, then recovers', async () => {
    fake.failNext(2, 429);
    const send = () => client.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'retry me' });
    await expect(send()).rejects.toMatchObject({ status: 429, code: 20429, moreInfo: 'https://www.twilio.com/docs/errors/20429' });
    fake.failNext(1, 400, { code: 63016, message: 'Failed to send freeform message because you are outside the allowed window.' });
    await expect(send()).rejects.toMatchObject({ status: 429 });
    await expect(send()).rejects.toMatchObject({ status: 400, code: 63016 });
    await expect(send()).resolves.toMatchObject({ status: 'queued' });
    expect(fake.messages).toHaveLength(1);
    expect(fake.requests.map((request) => request.status)).toEqual([429, 429, 400, 201]);
  });

  test('validates like Twilio: body limit and mixed channels', async () => {
    await expect(client.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'x'.repeat(1601) })).rejects.toMatchObject({
      status: 400,
      code: 21617,
    });
    await expect(client.messages.create({ to: '+15551234567', from: 'whatsapp:+14155238886', body: 'hi' })).rejects.toMatchObject({
      status: 400,
      code: 21910,
    });
    expect(fake.messages).toHaveLength(0);
  });

  test('delayNext holds a create back, and arrival order is kept', async () => {
    fake.delayNext(150);
    const started = Date.now();
    const first = client.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'first' });
    await fake.waitForMessages(1, 1_000);
    await first;
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    await client.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'second' });
    expect(fake.messages.map((message) => message.body)).toEqual(['first', 'second']);
  });

  test('waitForMessages rejects with what did arrive when too few come', async () => {
    await client.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'only one' });
    await expect(fake.waitForMessages(2, 100)).rejects.toThrow(/expected 2 message\(s\) within 100 ms, got 1: \["only one"\]/);
  });

  test('refuses wrong credentials with 401 and code 20003', async () => {
    const intruder = twilio(accountSid, 'wrong-token', { httpClient: new LocalTwilioHttpClient(fake.baseUrl) });
    await expect(intruder.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'no' })).rejects.toMatchObject({
      status: 401,
      code: 20003,
    });
    expect(fake.messages).toHaveLength(0);
  });

  test("the service's own client, over kept-alive connections: parallel sends, multi-byte text, typing, a refusal", async () => {
    const service = createTwilioClient({ accountSid, authToken, apiBaseUrl: fake.baseUrl });
    const before = fake.messages.length;
    const bodies = Array.from({ length: 12 }, (_, index) => `hola ${index} — ¿qué tal? 👋`);
    const sent = await Promise.all(bodies.map((body) => service.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body })));
    expect(sent.map((message) => message.body)).toEqual(bodies);
    expect(
      fake.messages
        .slice(before)
        .map((message) => message.body)
        .sort(),
    ).toEqual([...bodies].sort());
    fake.failNext(1, 429);
    await expect(service.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'later' })).rejects.toMatchObject({
      status: 429,
      code: 20429,
    });
    const intruder = createTwilioClient({ accountSid, authToken: 'wrong-token', apiBaseUrl: fake.baseUrl });
    await expect(intruder.messages.create({ to: 'whatsapp:+15551234567', from: 'whatsapp:+14155238886', body: 'no' })).rejects.toMatchObject({ status: 401 });
    expect(fake.messages).toHaveLength(before + bodies.length);
  });
});
