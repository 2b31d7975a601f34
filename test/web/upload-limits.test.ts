/**
 * What a stranger's uploads can cost, on the real stack (Redis, FerretDB's GridFS, the worker,
 * the deterministic model): an upload id serves one message (a second message naming it gets
 * 409 with its reason and a log line; the same message sent again is still accepted); a
 * visitor's uploads no message named yet are capped in count (429) and bytes (413); an upload
 * no message named within UPLOAD_UNCLAIMED_TTL_MINUTES is deleted with its chunks, a claimed one
 * kept; what is over MEDIA_MAX_TURN_BYTES is left out and the customer is told; a large photo
 * reaches the model downscaled.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import mongoose from 'mongoose';
import sharp from 'sharp';
import { MEDIA_FAILURE_REPLIES } from '../../src/media/inbound-media.js';
import { MODEL_IMAGE_MAX_SIDE } from '../../src/media/image-for-model.js';
import type { ReceivedFile, Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { turnsSettled } from '../support/settled.js';

const SHOP = 'https://limits-shop.example.test';
const SITES = JSON.stringify([{ key: 'limits-site', name: 'Harbour Lane', origins: [SHOP], greeting: 'Hi!', language: 'en' }]);
const PENDING_UPLOADS = 3;
/** A PDF padded to 7 MiB: two wait for a message, a third is over PENDING_BYTES. */
const LARGE_PDF = Buffer.concat([PDF_BYTES, Buffer.alloc(7 * 1024 * 1024, 0x20)]);
const PENDING_BYTES = 16 * 1024 * 1024;
/** A PDF padded to 600 KiB: a turn's media bytes hold one, not two. */
const MEDIUM_PDF = Buffer.concat([PDF_BYTES, Buffer.alloc(600 * 1024, 0x20)]);
const TURN_BYTES = 1024 * 1024;
const UNCLAIMED_TTL_MINUTES = 0.1;
/** The other suites' TTL: long enough that no upload expires while a loaded machine streams 16 MiB. */
const LONG_TTL_MINUTES = 30;
const FAILURE_NOTE = /Tell the customer this, in the language they write in: "([^"]+)"/;

let harness: Harness;
/** The files of each reply call, in call order. */
const filesSeen: ReceivedFile[][] = [];

const assistant: Script = (call) => {
  filesSeen.push(call.files);
  const told = FAILURE_NOTE.exec(call.userText)?.[1];
  if (told) return { text: told };
  return { text: `I can see ${call.files.map((file) => file.mediaType).join(' and ') || 'nothing'}.` };
};

const harnessWith = (ttlMinutes: number) =>
  startHarness({
    env: {
      WEB_SITES: SITES,
      WEB_VISITOR_UPLOADS_PER_MINUTE: '1000',
      WEB_IP_UPLOADS_PER_MINUTE: '1000',
      // The replies are polled from the history: on a loaded machine a turn outlasts the default 60 reads a minute.
      WEB_VISITOR_REQUESTS_PER_MINUTE: '100000',
      WEB_IP_REQUESTS_PER_MINUTE: '100000',
      WEB_VISITOR_PENDING_UPLOADS: String(PENDING_UPLOADS),
      WEB_VISITOR_PENDING_UPLOAD_BYTES: String(PENDING_BYTES),
      MEDIA_MAX_TURN_BYTES: String(TURN_BYTES),
      UPLOAD_UNCLAIMED_TTL_MINUTES: String(ttlMinutes),
    },
    script: assistant,
  });

beforeAll(async () => {
  harness = await harnessWith(LONG_TTL_MINUTES);
});
afterAll(() => harness.close());

async function session(): Promise<{ token: string; conversationId: string }> {
  const response = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'limits-site' });
  return response.body as { token: string; conversationId: string };
}

const upload = (token: string, body: Buffer, name = 'photo.png') =>
  harness.http
    .post(`/api/widget/uploads?name=${encodeURIComponent(name)}`)
    .set('Origin', SHOP)
    .set('Authorization', `Bearer ${token}`)
    .set('Content-Type', 'application/octet-stream')
    .send(body);

let counter = 0;
const post = (token: string, body: Record<string, unknown>) =>
  harness.http
    .post('/api/widget/messages')
    .set('Origin', SHOP)
    .set('Authorization', `Bearer ${token}`)
    .send({ clientMessageId: `limits-client-${Date.now()}-${++counter}`, ...body });

const rejections = (reason: string) => harness.logs.filter((line) => line.event === 'widget-request-rejected' && line.reason === reason);

async function replies(token: string, count: number): Promise<string[]> {
  return eventually(async () => {
    const history = await harness.http.get('/api/widget/history').set('Origin', SHOP).set('Authorization', `Bearer ${token}`);
    expect(history.status).toBe(200);
    const texts = (history.body.messages as { role: string; text: string }[]).filter((message) => message.role === 'assistant').map((message) => message.text);
    return texts.length >= count ? texts : undefined;
  }, 20_000);
}

describe('an upload serves one message', () => {
  test('a second message naming it gets 409 with the reason and a log line; the same message sent again is accepted', async () => {
    const visitor = await session();
    const { body: uploaded } = await upload(visitor.token, PNG_BYTES);
    const clientMessageId = `limits-first-${Date.now()}`;
    const first = await post(visitor.token, { clientMessageId, text: 'here it is', attachments: [uploaded.id] });
    expect(first.status).toBe(202);
    const again = await post(visitor.token, { clientMessageId, text: 'here it is', attachments: [uploaded.id] });
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ messageId: clientMessageId, duplicate: true });

    const reused = await post(visitor.token, { text: 'and here it is again', attachments: [uploaded.id] });
    expect(reused.status).toBe(409);
    expect(reused.body).toEqual({
      error: `attachment ${uploaded.id} was already sent with another message (or expired): upload the file again to send it again`,
      attachment: uploaded.id,
    });
    expect(rejections('attachment_reused')).toContainEqual(expect.objectContaining({ status: 409, attachment: uploaded.id }));
    await turnsSettled(harness.services);
    expect(await replies(visitor.token, 1)).toEqual(['I can see image/png.']);
  });
});

describe("a visitor's uploads no message named yet", () => {
  test(`are capped at ${PENDING_UPLOADS} (429) until a message names them`, async () => {
    const visitor = await session();
    const ids: string[] = [];
    for (let index = 0; index < PENDING_UPLOADS; index += 1) {
      const response = await upload(visitor.token, PNG_BYTES);
      expect(response.status).toBe(201);
      ids.push(response.body.id as string);
    }
    const refused = await upload(visitor.token, PNG_BYTES);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: `${PENDING_UPLOADS} uploads are waiting for a message (at most ${PENDING_UPLOADS}): send a message with them first`,
      maxPendingUploads: PENDING_UPLOADS,
    });
    expect(rejections('pending_uploads_count').length).toBeGreaterThan(0);
    // Another visitor is not held up by this one.
    expect((await upload((await session()).token, PNG_BYTES)).status).toBe(201);
    expect((await post(visitor.token, { text: 'my photos', attachments: ids })).status).toBe(202);
    expect((await upload(visitor.token, PNG_BYTES)).status).toBe(201);
    await turnsSettled(harness.services);
  });

  test(`are capped at ${PENDING_BYTES} bytes together (413)`, async () => {
    const visitor = await session();
    expect((await upload(visitor.token, LARGE_PDF, 'a.pdf')).status).toBe(201);
    expect((await upload(visitor.token, LARGE_PDF, 'b.pdf')).status).toBe(201);
    const refused = await upload(visitor.token, LARGE_PDF, 'c.pdf');
    expect(refused.status).toBe(413);
    expect(refused.body).toEqual({
      error: `uploads waiting for a message may hold at most ${PENDING_BYTES} bytes: send a message with them first`,
      maxPendingBytes: PENDING_BYTES,
    });
    expect(rejections('pending_uploads_bytes').length).toBeGreaterThan(0);
  });
});

describe(`an upload no message named within UPLOAD_UNCLAIMED_TTL_MINUTES (${UNCLAIMED_TTL_MINUTES})`, () => {
  // A service of its own with the short TTL; the suites around it keep the long one.
  let main: Harness;
  beforeAll(async () => {
    main = harness;
    harness = await harnessWith(UNCLAIMED_TTL_MINUTES);
  });
  afterAll(async () => {
    await harness.close();
    harness = main;
  });

  test('is deleted with its chunks; one a message named is kept', async () => {
    const visitor = await session();
    const { body: forgotten } = await upload(visitor.token, PNG_BYTES);
    const { body: sent } = await upload(visitor.token, PNG_BYTES);
    expect((await post(visitor.token, { text: 'this one', attachments: [sent.id] })).status).toBe(202);
    const chunksOf = (id: string) =>
      harness.services.mongo.collection('media.chunks').countDocuments({ files_id: mongoose.mongo.ObjectId.createFromHexString(id) });
    expect(await chunksOf(forgotten.id as string)).toBe(1);

    // GridFS deletes the file record, then its chunks: both gone.
    await eventually(
      async () => ((await harness.services.media.info(forgotten.id as string)) === undefined && (await chunksOf(forgotten.id as string)) === 0) || undefined,
      30_000,
    );
    expect(await harness.services.media.info(sent.id as string)).toMatchObject({ id: sent.id, conversationId: visitor.conversationId });
    // The sweep logs once it is through (the removal it waits for may be seen first).
    await eventually(() => harness.logs.find((line) => line.event === 'uploads-unclaimed-deleted'), 10_000);
    // Naming it now is naming nothing.
    const late = await post(visitor.token, { text: 'the other one', attachments: [forgotten.id] });
    expect(late.status).toBe(400);
    await turnsSettled(harness.services);
  });
});

describe('a turn sends the model at most MEDIA_MAX_TURN_BYTES of media', () => {
  test('a file over what is left is left out, and the customer is told', async () => {
    const visitor = await session();
    const first = await upload(visitor.token, MEDIUM_PDF, 'first.pdf');
    const second = await upload(visitor.token, MEDIUM_PDF, 'second.pdf');
    const before = filesSeen.length;
    expect((await post(visitor.token, { text: 'two invoices', attachments: [first.body.id, second.body.id] })).status).toBe(202);
    expect(await replies(visitor.token, 1)).toEqual([MEDIA_FAILURE_REPLIES['over-turn-limit']]);
    await turnsSettled(harness.services);
    expect(
      filesSeen
        .slice(before)
        .at(-1)
        ?.map((file) => [file.mediaType, file.size]),
    ).toEqual([['application/pdf', MEDIUM_PDF.length]]);
  });
});

describe('a large photo', () => {
  test(`reaches the model downscaled to ${MODEL_IMAGE_MAX_SIDE} px as a JPEG of a few hundred KiB`, async () => {
    // A 2400 × 1800 photo-like PNG (smooth colour and grain) of about 14 MB.
    const [width, height] = [2400, 1800];
    const pixels = await sharp(randomBytes(96 * 72 * 3), { raw: { width: 96, height: 72, channels: 3 } })
      .resize(width, height, { kernel: 'cubic' })
      .raw()
      .toBuffer();
    const grain = randomBytes(pixels.length);
    for (let index = 0; index < pixels.length; index += 1) pixels[index] = (pixels[index]! + (grain[index]! & 15)) & 255;
    const photo = await sharp(pixels, { raw: { width, height, channels: 3 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    expect(photo.length).toBeGreaterThan(8 * 1024 * 1024);

    const visitor = await session();
    const uploaded = await upload(visitor.token, photo, 'large.png');
    expect(uploaded.status).toBe(201);
    const before = filesSeen.length;
    expect((await post(visitor.token, { text: 'is this damaged?', attachments: [uploaded.body.id] })).status).toBe(202);
    expect(await replies(visitor.token, 1)).toEqual(['I can see image/jpeg.']);
    await turnsSettled(harness.services);
    const [sent] = filesSeen.slice(before).at(-1) ?? [];
    expect(sent?.size).toBeLessThan(1024 * 1024);
    const seen = await sharp(sent?.bytes).metadata();
    expect([seen.format, Math.max(seen.width ?? 0, seen.height ?? 0)]).toEqual(['jpeg', MODEL_IMAGE_MAX_SIDE]);
  }, 60_000);
});
