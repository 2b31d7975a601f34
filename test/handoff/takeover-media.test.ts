/**
 * While a teammate holds a conversation, everything the customer sends reaches them (issue 24),
 * on the real stack: Redis, FerretDB, the fake Twilio (which serves the customer's media and
 * records what the service sends) and the OpenAI-compatible stub (voice notes). A photo and a
 * PDF reach the holder's WhatsApp as media from a signed link to that one file, a voice note as
 * its transcription and the audio, an oversize video is announced; the transcript page shows
 * them; no model is called; each file is fetched and stored once; after hand-back the assistant
 * reads them as history. A teammate holding two conversations is asked which one their plain
 * text is for, and `#code #done` hands one back.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import type { Script } from '../support/deterministic-model.js';
import { eventually, PUBLIC_BASE_URL, startHarness, type Harness } from '../support/harness.js';
import { OGG_BYTES, PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { handoffsSettled, transcriptsWritten, turnsSettled } from '../support/settled.js';
import type { HandoffRecord } from '../../src/handoff/handoff-store.js';

const ANA = 'whatsapp:+34600924001';
const MAX_BYTES = 64 * 1024;
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/** The model: hands off to support on "person"; otherwise echoes what it read. */
const assistant: Script = (call) => {
  if (call.toolResults.length > 0) return { text: 'A teammate will write to you here shortly.' };
  if (/person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Router trouble' } }] };
  }
  return { text: `Happy to help: ${call.userText}` };
};

let harness: Harness;
let stub: OpenAIStub;

beforeAll(async () => {
  stub = await startOpenAIStub();
  harness = await startHarness({
    script: assistant,
    env: {
      OPENAI_BASE_URL: stub.baseUrl,
      MEDIA_MAX_BYTES: String(MAX_BYTES),
      NOTICE_BACKOFF_MS: '20',
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support team', members: [{ name: 'Ana', whatsapp: ANA }] } }),
    },
  });
});
afterAll(async () => {
  await harness.close();
  await stub.close();
});
beforeEach(() => stub.reset());

const to = (address: string) => harness.twilio.messages.filter((message) => message.to === address);
const bodiesTo = (address: string) => to(address).map((message) => message.body);

/** The customer asks for a person and Ana takes it over with the notice's code; resolves to the hand-off. */
async function heldByAna(customer: string, name: string): Promise<HandoffRecord> {
  await harness.sendWhatsapp({ from: customer, body: 'I need a person, my router is broken', profileName: name });
  await eventually(() => to(ANA).some((message) => message.body.includes(customer.replace('whatsapp:', ''))) || undefined);
  await handoffsSettled(harness.services);
  const handoff = (await harness.services.handoffs.list({ limit: 10 })).find((candidate) => candidate.customer.address === customer);
  if (!handoff?.shortCode) throw new Error('hand-off not found');
  const greeting = `Ana here, I have your case, ${name}`;
  await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} ${greeting}` });
  await eventually(() => bodiesTo(customer).includes(`Ana (Support team): ${greeting}`) || undefined);
  await turnsSettled(harness.services);
  return handoff;
}

/** A relayed file's link, fetched as Twilio would: the path and query on the service. */
async function fetchRelayed(url: string) {
  expect(url.startsWith(`${PUBLIC_BASE_URL}/transcripts/`)).toBe(true);
  return harness.http.get(url.slice(PUBLIC_BASE_URL.length)).buffer(true);
}

describe('media while a teammate holds the conversation', () => {
  test('a photo, a PDF, a voice note and an oversize video reach the holder; the page shows them; no model call; stored once; history after hand-back', async () => {
    const customer = 'whatsapp:+447700924001';
    const handoff = await heldByAna(customer, 'Maya');
    const code = `#${handoff.shortCode}`;
    const modelCalls = harness.models.calls.length;
    const toCustomer = bodiesTo(customer).length;
    const cdnFetches = harness.twilio.mediaRequests.length;

    // A photo with a caption: forwarded as media, captioned, from a signed link to that one file.
    const photoUrl = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
    await harness.sendWhatsapp({ from: customer, body: 'photo of the router lights', media: [{ url: photoUrl, contentType: 'image/png' }] });
    const photo = await eventually(() => to(ANA).find((message) => message.body.startsWith('Customer (photo)')));
    expect(photo.body).toBe(`Customer (photo): photo of the router lights\n${code}`);
    expect(photo.mediaUrls).toHaveLength(1);
    const photoServed = await fetchRelayed(photo.mediaUrls[0]!);
    expect(photoServed.status).toBe(200);
    expect(photoServed.headers['content-type']).toBe('image/png');
    expect(Buffer.compare(photoServed.body as Buffer, PNG_BYTES)).toBe(0);
    // The link opens that one file, not the transcript, and not with its signature altered.
    const photoLink = new URL(photo.mediaUrls[0]!);
    const transcriptWithMediaSig = await harness.http.get(`${photoLink.pathname.replace(/\/media\/[0-9a-f]+$/, '')}${photoLink.search}`);
    expect(transcriptWithMediaSig.status).toBe(403);
    const forged = new URLSearchParams(photoLink.search);
    forged.set('sig', `${forged.get('sig')!.slice(0, -1)}${forged.get('sig')!.endsWith('A') ? 'B' : 'A'}`);
    expect((await harness.http.get(`${photoLink.pathname}?${forged.toString()}`)).status).toBe(403);
    await turnsSettled(harness.services);

    // A PDF: forwarded as media.
    const pdfUrl = harness.twilio.addMedia({ body: PDF_BYTES, contentType: 'application/pdf' });
    await harness.sendWhatsapp({ from: customer, body: '', media: [{ url: pdfUrl, contentType: 'application/pdf' }] });
    const pdf = await eventually(() => to(ANA).find((message) => message.body.startsWith('Customer (PDF)')));
    expect(pdf.body).toBe(`Customer (PDF)\n${code}`);
    const pdfServed = await fetchRelayed(pdf.mediaUrls[0]!);
    expect(pdfServed.status).toBe(200);
    expect(Buffer.compare(pdfServed.body as Buffer, PDF_BYTES)).toBe(0);
    await turnsSettled(harness.services);

    // A voice note: its transcription, then the audio itself.
    stub.transcribeWith({ text: 'The lights are blinking orange' });
    const voiceUrl = harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' });
    await harness.sendWhatsapp({ from: customer, body: '', media: [{ url: voiceUrl, contentType: 'audio/ogg' }] });
    const audio = await eventually(() => to(ANA).find((message) => message.body.startsWith("Customer's voice note")));
    const heard = to(ANA).find((message) => message.body.startsWith('Customer (voice note)'));
    expect(heard?.body).toBe(`Customer (voice note): The lights are blinking orange\n${code}`);
    expect(heard?.mediaUrls).toEqual([]);
    expect(to(ANA).indexOf(heard!)).toBeLessThan(to(ANA).indexOf(audio));
    const audioServed = await fetchRelayed(audio.mediaUrls[0]!);
    expect(audioServed.status).toBe(200);
    expect(Buffer.compare(audioServed.body as Buffer, OGG_BYTES)).toBe(0);
    expect(stub.transcriptions).toHaveLength(1);
    await turnsSettled(harness.services);

    // An oversize video: announced, never downloaded.
    const videoUrl = harness.twilio.addMedia({ body: Buffer.alloc(MAX_BYTES * 2, 7), contentType: 'video/mp4' });
    await harness.sendWhatsapp({ from: customer, body: '', media: [{ url: videoUrl, contentType: 'video/mp4' }] });
    const video = await eventually(() => to(ANA).find((message) => message.body.startsWith('Customer sent a video')));
    expect(video.body).toMatch(/^Customer sent a video the service can't forward/);
    expect(video.mediaUrls).toEqual([]);
    await turnsSettled(harness.services);

    // Nothing reached a model, the customer got nothing from the assistant, each file was fetched and stored once.
    expect(harness.models.calls.length).toBe(modelCalls);
    expect(bodiesTo(customer)).toHaveLength(toCustomer);
    expect(harness.twilio.mediaRequests.length - cdnFetches).toBe(3);
    const stored = await harness.services.mongo.collection('media.files').find({ 'metadata.conversationId': customer }).toArray();
    expect(stored.map((file) => (file.metadata as { kind: string }).kind).sort()).toEqual(['audio', 'document', 'image']);

    // The transcript page shows them inline, as for any message.
    await transcriptsWritten(harness.services);
    const page = await harness.http.get(
      new URL(harness.services.transcriptLinks.url(customer)).pathname + new URL(harness.services.transcriptLinks.url(customer)).search,
    );
    expect(page.status).toBe(200);
    expect(page.text).toContain('(1 photo) photo of the router lights');
    expect(page.text).toMatch(/<img src="\/transcripts\/[^"]+\/media\/[0-9a-f]{24}\?/);
    expect(page.text).toMatch(/<audio controls preload="none" src="\/transcripts\/[^"]+\/media\/[0-9a-f]{24}\?/);
    expect(page.text).toContain('Transcription: The lights are blinking orange');
    expect(page.text).toContain('Download document');
    expect(page.text).toContain('not used: unsupported-type');

    // Hand-back: the assistant reads the held messages, media as text, as for any earlier message.
    expect((await harness.sendWhatsapp({ from: ANA, body: '#done' })).text).toBe(EMPTY_TWIML);
    await eventually(() => bodiesTo(customer).some((body) => body.startsWith("You're back with our assistant.")) || undefined);
    await harness.sendWhatsapp({ from: customer, body: 'still broken' });
    await eventually(() => bodiesTo(customer).includes('Happy to help: still broken') || undefined);
    const prompt = harness.models.replyCalls().at(-1)!.promptText;
    expect(prompt).toContain('(1 photo) photo of the router lights');
    expect(prompt).toContain('(1 PDF)');
    expect(prompt).toContain('Voice note: \\"The lights are blinking orange\\"');
    expect(prompt).toContain('(1 file)');
    // Stored once: the hand-back fetched nothing again.
    expect(harness.twilio.mediaRequests.length - cdnFetches).toBe(3);
    expect(stub.transcriptions).toHaveLength(1);
  });
});

describe('a teammate holding two conversations', () => {
  test('plain text asks which one; a reply to a relayed message or the code picks it; #code #done hands one back', async () => {
    const first = 'whatsapp:+447700924002';
    const second = 'whatsapp:+447700924003';
    const one = await heldByAna(first, 'Maya');
    const two = await heldByAna(second, 'Noor');
    const sentToFirst = bodiesTo(first).length;
    const sentToSecond = bodiesTo(second).length;

    // Plain text: nobody gets it; Ana is asked which conversation, with both codes.
    const asked = await harness.sendWhatsapp({ from: ANA, body: 'I am restarting the line now' });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('You have 2 conversations: Maya (#');
    expect(asked.text).toContain(`Maya (#${one.shortCode}), Noor (#${two.shortCode})`);
    expect(asked.text).toContain(`#${one.shortCode} I am restarting the line now`);
    await turnsSettled(harness.services);
    expect(bodiesTo(first)).toHaveLength(sentToFirst);
    expect(bodiesTo(second)).toHaveLength(sentToSecond);
    expect(harness.logs.some((line) => line.event === 'teammate-message-refused' && line.reason === 'ambiguous')).toBe(true);

    // Replying to a relayed message of the second customer picks that conversation.
    await harness.sendWhatsapp({ from: second, body: 'Is anyone there?' });
    const relay = await eventually(() => to(ANA).find((message) => message.body.startsWith('Customer: Is anyone there?')));
    // The relay's SID is remembered once Twilio answered the send: a reply to it is routed from then on.
    await eventually(() => harness.services.handoffs.resolveRef({ sid: relay.sid }));
    await harness.sendWhatsapp({ from: ANA, body: 'Yes, one moment', repliedTo: relay.sid });
    await eventually(() => bodiesTo(second).includes('Ana (Support team): Yes, one moment') || undefined);
    // The code picks the first.
    await harness.sendWhatsapp({ from: ANA, body: `#${one.shortCode} Restarting your line now` });
    await eventually(() => bodiesTo(first).includes('Ana (Support team): Restarting your line now') || undefined);

    // #code #done hands back only that one; plain text then goes to the one left.
    await harness.sendWhatsapp({ from: ANA, body: `#${two.shortCode} #done` });
    await eventually(() => bodiesTo(second).some((body) => body.startsWith("You're back with our assistant.")) || undefined);
    expect((await harness.services.handoffs.get(one._id))?.status).toBe('taken');
    await harness.sendWhatsapp({ from: ANA, body: 'Done, try again please' });
    await eventually(() => bodiesTo(first).includes('Ana (Support team): Done, try again please') || undefined);
    await turnsSettled(harness.services);
    expect(bodiesTo(second).filter((body) => body.includes('Done, try again please'))).toEqual([]);
  });
});
