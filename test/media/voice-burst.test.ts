/**
 * Voice notes in a burst, with coalescing on (a short quiet period; the media suite runs with
 * COALESCE_MS=0): a customer who sends several voice notes in a row gets one turn, and that turn
 * makes at most one transcription call across the batch — also when the batch is retried after
 * its reply failed to go out — while every message is recorded in MongoDB with its media. The
 * turn worker is paused while the burst is sent, so the whole burst is one batch whatever the
 * machine's speed.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from '@jest/globals';
import { MEDIA_FAILURE_REPLIES } from '../../src/media/inbound-media.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { OGG_BYTES } from '../support/media-fixtures.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { transcriptsWritten, turnsSettled } from '../support/settled.js';

const FAILURE_NOTE = /Tell the customer this, in the language they write in: "([^"]+)"/;

/** The model: says what it was told to say about a media it could not use, else echoes the customer's latest words. */
const assistant: Script = (call) => {
  const told = FAILURE_NOTE.exec(call.userText)?.[1];
  return { text: told ?? `You said: ${call.userText}` };
};

let harness: Harness;
let stub: OpenAIStub;
beforeAll(async () => {
  stub = await startOpenAIStub();
  harness = await startHarness({
    script: assistant,
    env: { OPENAI_BASE_URL: stub.baseUrl, COALESCE_MS: '300', MESSAGE_RETRY_BACKOFF_MS: '100', MESSAGE_RETRY_BUDGET_MS: '60000' },
  });
});
afterAll(async () => {
  await harness.close();
  await stub.close();
});
beforeEach(() => stub.reset());

const received = (customer: string) => harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);

/** Sends one voice note per message while the turn worker is paused (one batch), then lets it run; returns the message SIDs. */
async function voiceBurst(customer: string, count: number): Promise<string[]> {
  const sids = Array.from({ length: count }, () => newMessageSid());
  const worker = harness.worker!;
  await worker.pause();
  try {
    for (const messageSid of sids) {
      const url = harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' });
      expect((await harness.sendWhatsapp({ from: customer, body: '', messageSid, media: [{ url, contentType: 'audio/ogg' }] })).status).toBe(200);
    }
  } finally {
    worker.resume();
  }
  return sids;
}

/** The inbound records as MongoDB holds them once the transcript writer has caught up. */
async function inboundRecords(sids: readonly string[]) {
  await transcriptsWritten(harness.services);
  return Promise.all(sids.map(async (sid) => harness.services.transcripts.messages.findById(`in:whatsapp:${sid}`).lean().exec()));
}

test('three voice notes in a burst: one turn, one transcription call, one reply; every message recorded with its audio', async () => {
  stub.transcribeWith({ text: 'where is my order' });
  const customer = 'whatsapp:+447700914001';
  const replyCalls = harness.models.replyCalls().length;
  const sids = await voiceBurst(customer, 3);
  await eventually(() => received(customer).length > 0 || undefined, 20_000);
  await turnsSettled(harness.services);

  expect(stub.transcriptions).toHaveLength(1);
  expect(harness.models.replyCalls()).toHaveLength(replyCalls + 1);
  // The turn heard the first note; the last tells the customer to send the others one at a time.
  expect(received(customer)).toEqual([MEDIA_FAILURE_REPLIES['too-many-voice-notes']]);
  expect(harness.models.replyCalls().at(-1)?.promptText).toContain('Voice note: \\"where is my order\\"');

  const records = await inboundRecords(sids);
  expect(records.map((record) => [record?.status, record?.media?.map((item) => item.transcription ?? item.error)])).toEqual([
    ['received', ['where is my order']],
    ['received', ['too-many-voice-notes']],
    ['received', ['too-many-voice-notes']],
  ]);
  for (const record of records) expect(record?.media?.[0]).toMatchObject({ kind: 'audio', contentType: 'audio/ogg', size: OGG_BYTES.length });
}, 40_000);

test('a burst of voice notes whose reply failed to go out is retried as one and still makes one transcription call', async () => {
  stub.transcribeWith({ text: 'cancel my booking' });
  const customer = 'whatsapp:+447700914002';
  let failing = true;
  harness.twilio.failMatching((body) => failing && body === MEDIA_FAILURE_REPLIES['too-many-voice-notes'], 503);
  const sids = await voiceBurst(customer, 2);
  await eventually(() => harness.logs.some((line) => line.event === 'inbound-retrying' && line.messageId === sids[0]) || undefined, 20_000);
  failing = false;
  await eventually(() => received(customer).length > 0 || undefined, 20_000);
  await turnsSettled(harness.services);

  expect(received(customer)).toEqual([MEDIA_FAILURE_REPLIES['too-many-voice-notes']]);
  expect(stub.transcriptions).toHaveLength(1);
  const records = await inboundRecords(sids);
  expect(records.map((record) => [record?.status, record?.media?.map((item) => item.transcription ?? item.error)])).toEqual([
    ['received', ['cancel my booking']],
    ['received', ['too-many-voice-notes']],
  ]);
}, 40_000);
