/**
 * The widget's upload endpoint as a browser and an attacker meet it, on the real stack (Redis,
 * FerretDB's GridFS, the worker, the deterministic model): a photo is stored under the
 * visitor's conversation and the message naming it reaches the model as an image part; a file
 * over MEDIA_MAX_BYTES (declared or streamed), a ".png" that is really text, a missing token, a
 * foreign origin, a flood and another visitor's attachment id are each refused with their exact
 * status and error, a log line, and nothing stored or queued.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { LanguageModelV4Prompt } from '@ai-sdk/provider';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { turnsSettled } from '../support/settled.js';

const SHOP = 'https://uploads-shop.example.test';
const MAX_BYTES = 64 * 1024;
const VISITOR_UPLOADS_PER_MINUTE = 4;
const SITES = JSON.stringify([{ key: 'upload-site', name: 'Harbour Lane', origins: [SHOP], greeting: 'Hi!', language: 'en' }]);

let harness: Harness;
/** The media parts (type and media type) of every model prompt, in call order. */
const mediaSeen: { type: string; mediaType: string }[][] = [];

function mediaParts(prompt: LanguageModelV4Prompt): { type: string; mediaType: string }[] {
  return prompt.flatMap((message) =>
    message.role === 'user' ? message.content.flatMap((part) => (part.type === 'file' ? [{ type: part.type, mediaType: part.mediaType }] : [])) : [],
  );
}

beforeAll(async () => {
  harness = await startHarness({
    env: {
      WEB_SITES: SITES,
      MEDIA_MAX_BYTES: String(MAX_BYTES),
      WEB_VISITOR_UPLOADS_PER_MINUTE: String(VISITOR_UPLOADS_PER_MINUTE),
      WEB_IP_UPLOADS_PER_MINUTE: '1000',
    },
    script: (call) => {
      mediaSeen.push(mediaParts(call.options.prompt));
      return { text: 'I can see the photo: the hinge is cracked.' };
    },
  });
});
afterAll(() => harness.close());

async function session(): Promise<{ token: string; conversationId: string }> {
  const response = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'upload-site' });
  return response.body as { token: string; conversationId: string };
}

const upload = (token: string | undefined, body: Buffer, name = 'photo.png', origin = SHOP) => {
  const request = harness.http
    .post(`/api/widget/uploads?name=${encodeURIComponent(name)}`)
    .set('Origin', origin)
    .set('Content-Type', 'image/png');
  if (token) request.set('Authorization', `Bearer ${token}`);
  return request.send(body);
};

let counter = 0;
const post = (token: string, body: Record<string, unknown>) =>
  harness.http
    .post('/api/widget/messages')
    .set('Origin', SHOP)
    .set('Authorization', `Bearer ${token}`)
    .send({ clientMessageId: `upload-client-${Date.now()}-${++counter}`, ...body });

const storedFiles = () => harness.services.mongo.collection('media.files').countDocuments();
const rejections = (reason: string) => harness.logs.filter((line) => line.event === 'widget-request-rejected' && line.reason === reason);

describe('uploads', () => {
  test('a photo is stored under the conversation, and the message naming it reaches the model as an image part', async () => {
    const visitor = await session();
    const response = await upload(visitor.token, PNG_BYTES);
    expect(response.status).toBe(201);
    expect(response.headers['access-control-allow-origin']).toBe(SHOP);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      contentType: 'image/png',
      size: PNG_BYTES.length,
      name: 'photo.png',
      // A link signed for the file (issue 35: a sent PDF is a link at once).
      url: expect.stringMatching(/^\/api\/widget\/media\/[0-9a-f]{24}\?expires=/),
    });
    const stored = await harness.services.media.info(response.body.id as string);
    expect(stored).toMatchObject({ conversationId: visitor.conversationId, contentType: 'image/png', kind: 'image', filename: 'photo.png', channel: 'web' });

    const before = mediaSeen.length;
    const sent = await post(visitor.token, { text: "what's wrong here?", attachments: [response.body.id] });
    expect(sent.status).toBe(202);
    await eventually(() => mediaSeen.length > before || undefined);
    await turnsSettled(harness.services);
    expect(mediaSeen.slice(before).flat()).toContainEqual({ type: 'file', mediaType: 'image/png' });
  });

  test('a message of attachments only is accepted; one of neither text nor attachments is not', async () => {
    const visitor = await session();
    const { body } = await upload(visitor.token, PDF_BYTES, 'invoice.pdf');
    expect(body.contentType).toBe('application/pdf');
    expect((await post(visitor.token, { text: '', attachments: [body.id] })).status).toBe(202);
    const empty = await post(visitor.token, { text: '  ' });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ error: 'text: text is empty' });
    await turnsSettled(harness.services);
  });

  test('a declared size over MEDIA_MAX_BYTES gets 413 before anything is stored', async () => {
    const visitor = await session();
    const files = await storedFiles();
    const response = await upload(visitor.token, Buffer.concat([PNG_BYTES, Buffer.alloc(MAX_BYTES)]));
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: `the file is larger than ${MAX_BYTES} bytes`, maxBytes: MAX_BYTES });
    expect(rejections('upload_too_large').length).toBeGreaterThan(0);
    expect(await storedFiles()).toBe(files);
  });

  test('a streamed body without a length is cut off at MEDIA_MAX_BYTES: 413, and what was written is removed', async () => {
    const visitor = await session();
    const files = await storedFiles();
    const chunks = [PNG_BYTES, ...Array.from({ length: 12 }, () => Buffer.alloc(8 * 1024, 1))];
    const server = harness.services.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const address = server.address() as { port: number };
      const response = await fetch(`http://127.0.0.1:${address.port}/api/widget/uploads?name=big.png`, {
        method: 'POST',
        headers: { origin: SHOP, authorization: `Bearer ${visitor.token}`, 'content-type': 'application/octet-stream' },
        body: new ReadableStream({
          pull(controller) {
            const next = chunks.shift();
            if (next) controller.enqueue(new Uint8Array(next));
            else controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit & { duplex: 'half' });
      expect(response.status).toBe(413);
      expect(await response.json()).toEqual({ error: `the file is larger than ${MAX_BYTES} bytes`, maxBytes: MAX_BYTES });
    } finally {
      server.close();
    }
    expect(await storedFiles()).toBe(files);
    const ids = (
      await harness.services.mongo
        .collection('media.files')
        .find({}, { projection: { _id: 1 } })
        .toArray()
    ).map((document) => document._id);
    expect(await harness.services.mongo.collection('media.chunks').countDocuments({ files_id: { $nin: ids } })).toBe(0);
  });

  test('a ".png" that is really text gets 415, whatever its name and declared type say', async () => {
    const visitor = await session();
    const files = await storedFiles();
    const response = await upload(visitor.token, Buffer.from('just some text pretending to be a picture\n'), 'photo.png');
    expect(response.status).toBe(415);
    expect(response.body).toEqual({ error: 'this kind of file is not supported: send a JPEG, PNG, WebP or GIF image, or a PDF' });
    expect(rejections('upload_type').length).toBeGreaterThan(0);
    expect(await storedFiles()).toBe(files);
  });

  test('an empty upload gets 400', async () => {
    const visitor = await session();
    const response = await upload(visitor.token, Buffer.alloc(0));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'the upload is empty' });
  });

  test('no token gets 401, a foreign origin 403', async () => {
    const visitor = await session();
    const anonymous = await upload(undefined, PNG_BYTES);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'invalid token' });
    const foreign = await upload(visitor.token, PNG_BYTES, 'photo.png', 'https://evil.example');
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({ error: 'this origin is not allowed for the site', origin: 'https://evil.example' });
  });

  test('a visitor uploading too fast gets 429 with a retry time', async () => {
    const visitor = await session();
    const statuses: number[] = [];
    // Twice the limit and one: at least one refusal even if a minute boundary passes meanwhile.
    for (let index = 0; index < 2 * VISITOR_UPLOADS_PER_MINUTE + 1; index += 1) {
      const response = await upload(visitor.token, PNG_BYTES);
      statuses.push(response.status);
      if (response.status === 429) {
        expect(response.body).toEqual({ error: 'too many uploads, retry later', retryAfterSeconds: Number(response.headers['retry-after']) });
      }
    }
    expect(statuses).toContain(429);
    expect(statuses.filter((status) => status !== 201 && status !== 429)).toEqual([]);
  });

  test("another visitor's attachment id is refused with 400 and nothing is queued", async () => {
    const owner = await session();
    const thief = await session();
    const { body } = await upload(owner.token, PNG_BYTES);
    const response = await post(thief.token, { text: 'look at this', attachments: [body.id] });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: `unknown attachment ${body.id}: upload it in this conversation first`, attachment: body.id });
    expect(rejections('unknown_attachment').length).toBeGreaterThan(0);
    const history = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${thief.token}`);
    expect(history.body.messages).toEqual([]);
  });
});
