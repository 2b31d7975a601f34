/**
 * The media store on the real MongoDB-wire server (FerretDB in tests): GridFS through
 * mongoose's driver, content checked by the bytes, a size cap enforced while streaming (what
 * was written is removed), and retention.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import mongoose from 'mongoose';
import { MediaRejectedError } from '../../src/media/content-check.js';
import { createMediaStore, newMediaId, type MediaStore } from '../../src/media/media-store.js';
import { sweepOrphanChunks } from '../../src/store/retention.js';
import { startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';

let harness: Harness;
let store: MediaStore;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
  store = createMediaStore(harness.services.mongo, { maxBytes: 64 * 1024 });
});
afterAll(() => harness.close());

/** A stream of `total` bytes in `chunk`-sized pieces that counts what was read from it. */
function countingStream(head: Buffer, total: number, chunk = 8 * 1024) {
  const counter = { read: 0 };
  async function* generate() {
    let sent = 0;
    while (sent < total) {
      const size = Math.min(chunk, total - sent);
      const piece = Buffer.alloc(size, 0x20);
      if (sent === 0) head.copy(piece);
      sent += size;
      counter.read = sent;
      yield piece;
    }
  }
  return { stream: Readable.from(generate()), counter };
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('media store', () => {
  test('stores a photo and reads the same bytes back, typed by its content', async () => {
    const info = await store.put(Readable.from([PNG_BYTES]), { contentType: 'image/png', conversationId: 'whatsapp:+440000001301', channel: 'whatsapp' });
    expect(info).toMatchObject({ contentType: 'image/png', kind: 'image', size: PNG_BYTES.length, conversationId: 'whatsapp:+440000001301' });
    const opened = await store.open(info.id);
    expect(opened?.info).toMatchObject({ id: info.id, contentType: 'image/png', size: PNG_BYTES.length });
    expect(await collect(opened?.stream ?? Readable.from([]))).toEqual(PNG_BYTES);
  });

  test('a file past the cap is refused while it streams and leaves nothing behind', async () => {
    const { stream, counter } = countingStream(PDF_BYTES, 10 * 64 * 1024);
    const refused = await store
      .put(stream, { contentType: 'application/pdf', conversationId: 'c1', id: 'aaaaaaaaaaaaaaaaaaaaaaaa' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(MediaRejectedError);
    expect((refused as MediaRejectedError).reason).toBe('too-large');
    // Reading stopped at the cap, not at the end of the source.
    expect(counter.read).toBeLessThanOrEqual(64 * 1024 + 2 * 8 * 1024); // a chunk of read-ahead, not the 640 KiB source
    expect(await store.info('aaaaaaaaaaaaaaaaaaaaaaaa')).toBeUndefined();
    const chunks = await harness.services.mongo.collection('media.chunks').countDocuments({ files_id: { $exists: true } });
    const files = await harness.services.mongo.collection('media.files').countDocuments({});
    expect(files).toBe(1);
    expect(chunks).toBe(1);
  });

  test('bytes that are not what the header says are refused as an unsupported type', async () => {
    const html = Buffer.from('<html><script>alert(1)</script></html>');
    const refused = await store.put(Readable.from([html]), { contentType: 'image/jpeg', conversationId: 'c1' }).catch((error: unknown) => error);
    expect((refused as MediaRejectedError).reason).toBe('unsupported-type');
    const mislabelled = await store.put(Readable.from([PDF_BYTES]), { contentType: 'image/png', conversationId: 'c1' }).catch((error: unknown) => error);
    expect((mislabelled as MediaRejectedError).reason).toBe('unsupported-type');
  });

  test('a transcription is kept on the file, and retention removes old files', async () => {
    const info = await store.put(Readable.from([PNG_BYTES]), { contentType: 'image/png', conversationId: 'c2' });
    await store.setTranscription(info.id, 'hello');
    expect((await store.info(info.id))?.transcription).toBe('hello');
    expect(await store.purgeOlderThan(new Date(Date.now() - 60_000))).toBe(0);
    expect(await store.purgeOlderThan(new Date(Date.now() + 60_000))).toBeGreaterThanOrEqual(1);
    expect(await store.info(info.id)).toBeUndefined();
  });
});

describe('GridFS compatibility', () => {
  test("a file GridFS's own writer stored is read and removed; a file this store wrote is read by GridFS's reader", async () => {
    const { GridFSBucket, ObjectId } = mongoose.mongo;
    const bucket = new GridFSBucket(harness.services.mongo.db!, { bucketName: 'media' });
    const legacyId = new ObjectId();
    const bytes = Buffer.concat([PNG_BYTES, Buffer.alloc(600 * 1024, 7)]);
    await new Promise<void>((resolve, reject) => {
      const upload = bucket.openUploadStreamWithId(legacyId, 'old.png', { metadata: { conversationId: 'c5', contentType: 'image/png', kind: 'image' } });
      upload.once('finish', () => resolve()).once('error', reject);
      upload.end(bytes);
    });
    const legacy = await store.open(legacyId.toHexString());
    expect(await collect(legacy!.stream)).toEqual(bytes);
    await store.remove(legacyId.toHexString());
    expect(await harness.services.mongo.collection('media.chunks').countDocuments({ files_id: legacyId })).toBe(0);

    const written = await store.put(Readable.from([bytes]), { contentType: 'image/png', conversationId: 'c5', maxBytes: 1024 * 1024 });
    expect(await collect(bucket.openDownloadStream(ObjectId.createFromHexString(written.id)) as unknown as Readable)).toEqual(bytes);
    // Its chunks are keyed by the file's id and their index (read by _id, which FerretDB pushes down).
    const ids = await harness.services.mongo
      .collection('media.chunks')
      .find({ files_id: ObjectId.createFromHexString(written.id) }, { projection: { _id: 1 } })
      .toArray();
    expect(ids.map(({ _id }) => String(_id)).sort()).toEqual([0, 1, 2].map((n) => `${written.id}:${n}`));
    await store.remove(written.id);
    expect(await harness.services.mongo.collection('media.chunks').countDocuments({ files_id: ObjectId.createFromHexString(written.id) })).toBe(0);
  });
});

describe('a retried fetch', () => {
  test('stores over the chunks a crashed attempt left under the same id, and reads the new bytes', async () => {
    const { Binary, ObjectId } = mongoose.mongo;
    const id = newMediaId();
    const chunks = harness.services.mongo.collection('media.chunks');
    // A crashed attempt: two chunks written, no file record.
    for (const n of [0, 1]) {
      await chunks.insertOne({
        _id: `${id}:${n}` as never,
        files_id: ObjectId.createFromHexString(id),
        n,
        data: new Binary(Buffer.alloc(255 * 1024, 9)),
        at: new Date(),
      });
    }
    const bytes = Buffer.concat([PNG_BYTES, Buffer.alloc(300 * 1024, 3)]);
    const info = await store.put(Readable.from([bytes]), { id, contentType: 'image/png', conversationId: 'c6', maxBytes: 1024 * 1024 });
    expect(info.size).toBe(bytes.length);
    expect(await collect((await store.open(id))!.stream)).toEqual(bytes);
    await store.remove(id);
    expect(await chunks.countDocuments({ files_id: ObjectId.createFromHexString(id) })).toBe(0);
  });
});

describe('chunks without a file', () => {
  const chunks = () => harness.services.mongo.collection('media.chunks');

  test('an upload broken off right after a full chunk leaves none behind (the chunk in flight is waited for)', async () => {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const id = newMediaId();
      async function* brokenOff() {
        // Almost a GridFS chunk (255 KiB), then a small piece that completes it: that chunk's
        // insert is in flight (the write did not ask to wait) when the client goes away.
        yield Buffer.concat([PNG_BYTES, Buffer.alloc(255 * 1024 - 100 - PNG_BYTES.length, 1)]);
        yield Buffer.alloc(1024, 1);
        throw new Error('aborted');
      }
      const refused = await store
        .put(Readable.from(brokenOff()), { id, contentType: 'image/png', conversationId: 'c3', maxBytes: 1024 * 1024 })
        .catch((error: unknown) => error);
      expect(refused).toEqual(new Error('aborted'));
      expect(await chunks().countDocuments({ files_id: mongoose.mongo.ObjectId.createFromHexString(id) })).toBe(0);
    }
  });

  test('the sweep deletes chunks whose file has no record once they are old; fresh ones and stored files stay', async () => {
    const { ObjectId, Binary } = mongoose.mongo;
    // The sweep runs an hour from now: what was written before a quarter of an hour from now is old.
    const sweepAt = Date.now() + 60 * 60_000;
    const seconds = (at: number) => Math.floor(at / 1000);
    const oldOrphan = new ObjectId();
    const freshOrphan = new ObjectId();
    await chunks().insertMany([
      { _id: ObjectId.createFromTime(seconds(Date.now() - 60 * 60_000)), files_id: oldOrphan, n: 0, data: new Binary(Buffer.alloc(16)) },
      { _id: ObjectId.createFromTime(seconds(Date.now() - 50 * 60_000)), files_id: oldOrphan, n: 1, data: new Binary(Buffer.alloc(16)) },
      { _id: ObjectId.createFromTime(seconds(sweepAt - 5 * 60_000)), files_id: freshOrphan, n: 0, data: new Binary(Buffer.alloc(16)) },
    ]);
    // Its chunk is old by then, but it has its file.
    const kept = await store.put(Readable.from([PNG_BYTES]), { contentType: 'image/png', conversationId: 'c4' });

    const swept = await sweepOrphanChunks({ media: store, logger: harness.services.logger, now: () => sweepAt });
    expect(swept).toBeGreaterThanOrEqual(1);
    expect(await chunks().countDocuments({ files_id: oldOrphan })).toBe(0);
    expect(await chunks().countDocuments({ files_id: freshOrphan })).toBe(1);
    expect(await chunks().countDocuments({ files_id: ObjectId.createFromHexString(kept.id) })).toBe(1);
    expect(await store.info(kept.id)).toMatchObject({ id: kept.id });
    await chunks().deleteMany({ files_id: freshOrphan });
  });
});

describe('a retried message', () => {
  test('finds its media stored and transcribed by the earlier attempt: no second download, no second transcription', async () => {
    const { createMediaIntake } = await import('../../src/media/inbound-media.js');
    const { whatsappMediaSource } = await import('../../channels/whatsapp/media-source.js');
    const { OGG_BYTES } = await import('../support/media-fixtures.js');
    let transcriptions = 0;
    const intake = createMediaIntake({
      store,
      sources: {
        whatsapp: whatsappMediaSource({ accountSid: harness.twilio.accountSid, authToken: harness.twilio.authToken, apiBaseUrl: harness.twilio.baseUrl }),
      },
      transcribe: async () => {
        transcriptions += 1;
        return 'where is my order';
      },
      maxBytes: 64 * 1024,
      maxTurnBytes: 1024 * 1024,
      maxWorkerBytes: 1024 * 1024,
      fetchTimeoutMs: 5_000,
      transcribeTimeoutMs: 5_000,
      logger: harness.services.logger,
      metrics: harness.services.metrics,
    });
    const url = harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' });
    const message = {
      channel: 'whatsapp',
      conversationKey: 'whatsapp:+440000001399',
      messageId: 'MM0123456789abcdef0123456789abcdef',
      from: { address: 'whatsapp:+440000001399' },
      text: '',
      receivedAt: Date.now(),
      metadata: {},
      // Two voice notes: the turn transcribes the first; a retry must not transcribe the second.
      media: [
        { url, contentType: 'audio/ogg' },
        { url: harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' }), contentType: 'audio/ogg' },
      ],
    };
    const context = { conversationId: message.conversationKey, signal: new AbortController().signal, logger: harness.services.logger };
    // Each attempt of the turn is a turn of its own.
    const attempt = async () => {
      const turn = await intake.startTurn([message], context);
      try {
        return await turn.prepare(message);
      } finally {
        turn.end();
      }
    };
    const first = await attempt();
    const again = await attempt();
    // The same media and text, the transcription read back (still the turn's one); only the first attempt made the call.
    expect(again).toEqual(first);
    expect(first?.transcribed).toBe(true);
    expect(first?.media.map((item) => item.transcription ?? item.error)).toEqual(['where is my order', 'too-many-voice-notes']);
    expect(first?.text).toBe('(2 voice notes)\nVoice note: "where is my order"');
    expect(transcriptions).toBe(1);
    expect(harness.twilio.mediaRequests).toHaveLength(2);
  });
});
