/**
 * Customers' media on WhatsApp, on the real stack: the fake Twilio API serves each MediaUrl
 * behind basic auth and redirects to a loopback "CDN"; the OpenAI-compatible stub transcribes
 * voice notes; the deterministic model shows what reached it. What the customer gets back, what
 * the model and the judge saw, and what MongoDB keeps are asserted — including each kind of
 * bad media, which is answered plainly and never blocks the conversation.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { MEDIA_FAILURE_REPLIES } from '../../src/media/inbound-media.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { OGG_BYTES, PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const MAX_BYTES = 256 * 1024;
const FAILURE_NOTE = /Tell the customer this, in the language they write in: "([^"]+)"/;

/** The model, played by a script: says what it was told to say about a bad media, describes the parts it got, else echoes. */
const assistant: Script = (call) => {
  if (/hand me to a person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'The screen of the device is cracked', email: 'ana@example.com' } }] };
  }
  if (call.toolResults.length > 0) return { text: 'A teammate will write to you shortly.' };
  const told = FAILURE_NOTE.exec(call.userText)?.[1];
  if (told) return { text: told };
  if (call.files.length > 0) return { text: `I can see ${call.files.map((file) => file.mediaType).join(' and ')}.` };
  return { text: `You said: ${call.userText}` };
};

let harness: Harness;
let stub: OpenAIStub;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let numbers = 0;
/** A customer number of its own per test (harnesses share one Redis). */
const nextCustomer = () => `whatsapp:+4477009013${String((numbers += 1)).padStart(2, '0')}`;

beforeAll(async () => {
  stub = await startOpenAIStub();
  receiver = await startWebhookReceiver();
  harness = await startHarness({
    script: assistant,
    env: {
      OPENAI_BASE_URL: stub.baseUrl,
      MEDIA_MAX_BYTES: String(MAX_BYTES),
      MEDIA_FETCH_TIMEOUT_MS: '500',
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support team', webhooks: [receiver.url('/support')], responseTime: 'within two hours' } }),
    },
  });
});
afterAll(async () => {
  await harness.close();
  await stub.close();
  await receiver.close();
});
beforeEach(() => {
  stub.reset();
  harness.twilio.reset();
});

/** The replies the customer got, in order, once there are `count`. */
async function repliesTo(customer: string, count: number): Promise<string[]> {
  return eventually(() => {
    const bodies = harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
    return bodies.length >= count ? bodies : undefined;
  });
}

async function inboundRecord(messageSid: string) {
  return eventually(async () => (await harness.services.transcripts.messages.findById(`in:whatsapp:${messageSid}`).lean().exec()) ?? undefined);
}

function sid(): string {
  return `MM${Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32)}`;
}

describe('media on WhatsApp', () => {
  test('a voice note is transcribed once and answered like text; the transcript keeps the transcription and the audio', async () => {
    stub.transcribeWith({ text: "I can't log in to my account" });
    const customer = nextCustomer();
    const messageSid = sid();
    const url = harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' });
    const response = await harness.sendWhatsapp({ from: customer, body: '', messageSid, media: [{ url, contentType: 'audio/ogg' }] });
    expect(response.status).toBe(200);

    const [reply] = await repliesTo(customer, 1);
    expect(reply).toBe('You said: (1 voice note)\nVoice note: "I can\'t log in to my account"');
    expect(stub.transcriptions).toHaveLength(1);
    expect(stub.transcriptions[0]?.model).toBe('gpt-4o-mini-transcribe');
    expect(Buffer.compare(stub.transcriptions[0]?.audio ?? Buffer.alloc(0), OGG_BYTES)).toBe(0);
    // The judge routed on the transcription (support: "log in").
    const judged = harness.models.calls.filter((call) => call.structured).at(-1);
    expect(judged?.userText).toContain('Voice note: "I can\'t log in to my account"');

    const record = await inboundRecord(messageSid);
    expect(record.text).toBe('(1 voice note)\nVoice note: "I can\'t log in to my account"');
    expect(record.media).toEqual([
      expect.objectContaining({ kind: 'audio', contentType: 'audio/ogg', size: OGG_BYTES.length, transcription: "I can't log in to my account" }),
    ]);
    const stored = await harness.services.media.info(record.media?.[0]?.id ?? '');
    expect(stored).toMatchObject({ kind: 'audio', conversationId: customer.replace('whatsapp:', 'whatsapp:'), size: OGG_BYTES.length });
  });

  test("the media URL gets the account's credentials; the CDN it redirects to never does", async () => {
    const customer = nextCustomer();
    const url = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
    await harness.sendWhatsapp({ from: customer, body: 'look', media: [{ url, contentType: 'image/png' }] });
    await repliesTo(customer, 1);
    expect(harness.twilio.requests.filter((request) => request.path.includes('/Media/')).map((request) => request.status)).toEqual([307]);
    expect(harness.twilio.mediaRequests).toHaveLength(1);
    expect(harness.twilio.mediaRequests[0]?.authorization).toBeUndefined();
  });

  test('a photo with a caption reaches the reply model as an image part; the judge sees the caption and "(1 photo)", not the bytes', async () => {
    const customer = nextCustomer();
    const messageSid = sid();
    const url = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
    await harness.sendWhatsapp({ from: customer, body: "what's wrong here?", messageSid, media: [{ url, contentType: 'image/png' }] });

    expect(await repliesTo(customer, 1)).toEqual(['I can see image/png.']);
    const reply = harness.models.replyCalls().at(-1);
    expect(reply?.files).toEqual([expect.objectContaining({ mediaType: 'image/png', size: PNG_BYTES.length })]);
    expect(Buffer.compare(Buffer.from(reply?.files[0]?.bytes ?? new Uint8Array()), PNG_BYTES)).toBe(0);
    const judged = harness.models.calls.filter((call) => call.structured).at(-1);
    expect(judged?.userText).toContain("Customer: (1 photo) what's wrong here?");
    expect(judged?.files).toEqual([]);
    expect(judged?.promptText).not.toContain(PNG_BYTES.toString('base64'));
    const record = await inboundRecord(messageSid);
    expect(record.text).toBe("(1 photo) what's wrong here?");
    expect(record.media).toEqual([expect.objectContaining({ kind: 'image', contentType: 'image/png', id: expect.stringMatching(/^[0-9a-f]{24}$/) })]);
  });

  test('three media in one message: a photo and a PDF reach the model as parts, the voice note as its transcription', async () => {
    stub.transcribeWith({ text: 'This invoice is wrong' });
    const customer = nextCustomer();
    const messageSid = sid();
    const media = [
      { url: harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' }), contentType: 'image/png' },
      { url: harness.twilio.addMedia({ body: PDF_BYTES, contentType: 'application/pdf' }), contentType: 'application/pdf' },
      { url: harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' }), contentType: 'audio/ogg' },
    ];
    await harness.sendWhatsapp({ from: customer, body: 'see attached', messageSid, media });

    expect(await repliesTo(customer, 1)).toEqual(['I can see image/png and application/pdf.']);
    const reply = harness.models.replyCalls().at(-1);
    expect(reply?.userText).toBe('(1 photo, 1 voice note, 1 PDF) see attached\nVoice note: "This invoice is wrong"');
    expect(stub.transcriptions).toHaveLength(1);
    const record = await inboundRecord(messageSid);
    expect(record.media?.map((item) => [item.kind, item.contentType])).toEqual([
      ['image', 'image/png'],
      ['document', 'application/pdf'],
      ['audio', 'audio/ogg'],
    ]);
    expect(new Set(record.media?.map((item) => item.id)).size).toBe(3);
  });

  test('two voice notes in one message: one transcription call, and the customer is asked to send the other on its own', async () => {
    stub.transcribeWith({ text: 'first note' });
    const customer = nextCustomer();
    const messageSid = sid();
    const media = [1, 2].map(() => ({ url: harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' }), contentType: 'audio/ogg' }));
    await harness.sendWhatsapp({ from: customer, body: '', messageSid, media });
    expect(await repliesTo(customer, 1)).toEqual([MEDIA_FAILURE_REPLIES['too-many-voice-notes']]);
    expect(stub.transcriptions).toHaveLength(1);
    expect(harness.models.replyCalls().at(-1)?.userText).toContain('Voice note: "first note"');
    const record = await inboundRecord(messageSid);
    expect(record.media?.map((item) => item.transcription ?? item.error)).toEqual(['first note', 'too-many-voice-notes']);
  });

  test('the hand-off notice says the customer sent a photo', async () => {
    const customer = nextCustomer();
    const url = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
    await harness.sendWhatsapp({ from: customer, body: 'my screen is cracked, hand me to a person please', media: [{ url, contentType: 'image/png' }] });
    await repliesTo(customer, 1);
    const notice = await eventually(() => receiver.received.find((entry) => JSON.stringify(entry.body).includes(customer.replace('whatsapp:', ''))));
    expect(notice.body.text).toContain('(1 photo) my screen is cracked');
  });
});

describe('bad media gets a plain answer, is recorded, and blocks nothing', () => {
  /** Sends one media message, then a text: both are answered, once each, and nothing is given up on. */
  async function badMedia(media: { url: string; contentType: string }, expected: string, reason: string) {
    const customer = nextCustomer();
    const messageSid = sid();
    await harness.sendWhatsapp({ from: customer, body: '', messageSid, media: [media] });
    const [first] = await repliesTo(customer, 1);
    expect(first).toBe(expected);
    const record = await inboundRecord(messageSid);
    expect(record.media).toEqual([expect.objectContaining({ error: reason })]);
    expect(record.status).toBe('received');
    await harness.sendWhatsapp({ from: customer, body: 'hello again' });
    expect(await repliesTo(customer, 2)).toEqual([expected, expect.stringContaining('hello again')]);
    expect(harness.logs.filter((line) => line.event === 'inbound-failed' || line.event === 'inbound-retrying')).toEqual([]);
  }

  test('too big: refused without holding it, and the customer is asked for a smaller file', async () => {
    const big = Buffer.concat([PDF_BYTES, Buffer.alloc(MAX_BYTES + 1024, 0x20)]);
    await badMedia(
      { url: harness.twilio.addMedia({ body: big, contentType: 'application/pdf' }), contentType: 'application/pdf' },
      MEDIA_FAILURE_REPLIES['too-large'],
      'too-large',
    );
  });

  test('too big without a Content-Length: stopped while streaming', async () => {
    const big = Buffer.concat([PDF_BYTES, Buffer.alloc(4 * MAX_BYTES, 0x20)]);
    const url = harness.twilio.addMedia({ body: big, contentType: 'application/pdf', chunked: true });
    await badMedia({ url, contentType: 'application/pdf' }, MEDIA_FAILURE_REPLIES['too-large'], 'too-large');
  });

  test('an unsupported kind (a video) is not downloaded; the customer is told which kinds are understood', async () => {
    const url = harness.twilio.addMedia({ body: Buffer.alloc(64), contentType: 'video/mp4' });
    await badMedia({ url, contentType: 'video/mp4' }, MEDIA_FAILURE_REPLIES['unsupported-type'], 'unsupported-type');
    expect(harness.twilio.mediaRequests).toHaveLength(0);
  });

  test('bytes that are not what the header says (HTML sent as a JPEG) are refused by their content', async () => {
    const url = harness.twilio.addMedia({ body: Buffer.from('<html><body>not a photo</body></html>'), contentType: 'image/jpeg' });
    await badMedia({ url, contentType: 'image/jpeg' }, MEDIA_FAILURE_REPLIES['unsupported-type'], 'unsupported-type');
  });

  test('a download that fails', async () => {
    const url = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png', status: 500 });
    await badMedia({ url, contentType: 'image/png' }, MEDIA_FAILURE_REPLIES['download-failed'], 'download-failed');
  });

  test('a download that never finishes times out', async () => {
    const url = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png', stall: true });
    await badMedia({ url, contentType: 'image/png' }, MEDIA_FAILURE_REPLIES['download-timeout'], 'download-timeout');
  });

  test('a transcription error', async () => {
    stub.transcribeWith({ status: 500 });
    const url = harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' });
    await badMedia({ url, contentType: 'audio/ogg' }, MEDIA_FAILURE_REPLIES['transcription-failed'], 'transcription-failed');
    expect(stub.transcriptions).toHaveLength(1);
  });

  test('a media URL on a host that is not Twilio is never requested (SSRF)', async () => {
    let hits = 0;
    const elsewhere: Server = createServer((_request, response) => {
      hits += 1;
      response.end('secret');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', () => resolve()));
    try {
      const url = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/latest/meta-data`;
      await badMedia({ url, contentType: 'image/png' }, MEDIA_FAILURE_REPLIES['download-failed'], 'download-failed');
      expect(hits).toBe(0);
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });
});

test('the webhook acknowledges at once and never downloads', async () => {
  const quiet = await startHarness({ worker: false, twilio: harness.twilio });
  try {
    const url = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
    const response = await quiet.sendWhatsapp({ from: nextCustomer(), body: 'photo', media: [{ url, contentType: 'image/png' }] });
    expect(response.status).toBe(200);
    expect(harness.twilio.requests.filter((request) => request.path.includes('/Media/'))).toHaveLength(0);
  } finally {
    await quiet.close();
  }
});

test('a webhook with NumMedia but no MediaUrl is refused with a reason', async () => {
  const response = await harness.sendWhatsapp({ from: nextCustomer(), body: 'x', media: [{ url: 'not a url', contentType: 'image/png' }] });
  expect(response.status).toBe(400);
  expect(response.body).toEqual({ error: expect.stringContaining('MediaUrl0') });
});

test('each media count is checked whole: after a one-image message, a second bad image of two is refused by name', async () => {
  const good = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
  const one = await harness.sendWhatsapp({ from: nextCustomer(), body: 'one', media: [{ url: good, contentType: 'image/png' }] });
  expect(one.status).toBe(200);
  const two = await harness.sendWhatsapp({
    from: nextCustomer(),
    body: 'two',
    media: [
      { url: good, contentType: 'image/png' },
      { url: 'not a url', contentType: 'image/png' },
    ],
  });
  expect(two.status).toBe(400);
  expect(two.body).toEqual({ error: expect.stringContaining('MediaUrl1') });
});
