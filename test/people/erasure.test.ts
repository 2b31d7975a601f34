/**
 * A person's data on request, end to end: one person given a life across WhatsApp and the widget
 * (messages, a photo, a hand-off taken and handed back by a teammate with the suggestion it
 * drafts, a rating with a comment, a verified widget chat) is exported whole, then erased; a scan
 * of every MongoDB collection (GridFS included), every Redis key's name and value (streams and
 * BullMQ's queues included) finds none of their number, e-mail, name or words, while another
 * person's data stays. Erasing again is a 200 with nothing to do; the record lists who and how
 * many; a message after the erasure starts a new, empty conversation.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { admin, peopleEnv, peopleModels, person, scanStores, transcriptsWritten, turnsSettled, whatsappLife, widgetLife } from './life.js';

let harness: Harness;
beforeAll(async () => {
  // Usage folded only when asked: a miss stays in its turn's usage entry, not yet listed, until the owner looks.
  harness = await startHarness({ models: peopleModels(), env: peopleEnv({ USAGE_FLUSH_INTERVAL_MS: '3600000' }) });
});
afterAll(async () => harness.close());

const maya = person('maya', '15101');
const bob = person('bob', '15102');
const needlesOf = (who: typeof maya) => [who.number, who.email, who.name, ...who.texts.filter((text) => !text.startsWith('⭐'))];

describe('one person, every store', () => {
  let web: string;
  /** A transcript link signed before the erasure (as a hand-off notice carries). */
  let oldLink: string;
  const open = (link: string) => {
    const url = new URL(link);
    return harness.http.get(url.pathname + url.search);
  };
  beforeAll(async () => {
    for (const who of [maya, bob]) {
      const contact = await admin(harness).put(`/admin/contacts/${encodeURIComponent(who.address)}`, {
        name: who.name,
        email: who.email,
        externalId: who.userId,
      });
      expect(contact.status).toBeLessThan(300);
    }
    await whatsappLife(harness, maya);
    web = await widgetLife(harness, maya);
    // Bob: a plain exchange on WhatsApp.
    bob.texts.push('Bob asks about the blue kettle');
    await harness.sendWhatsapp({ from: bob.address, body: bob.texts[0]!, profileName: bob.name });
    await eventually(() => harness.twilio.messages.some((message) => message.to === bob.address) || undefined, 20_000);
    await turnsSettled(harness.services);
    await transcriptsWritten(harness.services);
  }, 240_000);

  test('a malformed id is a 400 naming the forms; no token is a 401', async () => {
    const bad = await admin(harness).get('/admin/people/not-a-person/export');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^invalid person id: expected whatsapp:\+<E\.164 number>/);
    expect((await admin(harness).post('/admin/people/12345/erase')).status).toBe(400);
    expect((await harness.http.get(`/admin/people/${maya.address}/export`)).status).toBe(401);
  });

  test('the export holds every conversation, message, media link, rating, hand-off, takeover line and suggestion', async () => {
    const response = await admin(harness).get(`/admin/people/${encodeURIComponent(maya.address)}/export`);
    expect(response.status).toBe(200);
    const document = response.body;
    expect(document.contact).toMatchObject({ address: maya.address, email: maya.email, name: maya.name });
    expect(document.conversations.map((conversation: { key: string }) => conversation.key).sort()).toEqual([maya.address, web].sort());
    const texts = document.conversations.flatMap((conversation: { messages: { text: string }[] }) => conversation.messages.map((message) => message.text));
    for (const text of maya.texts) expect(texts.some((stored: string) => stored.endsWith(text))).toBe(true);
    const outbound = document.conversations[0].messages.find((message: { direction: string }) => message.direction === 'outbound');
    expect(outbound.status).toEqual(expect.any(String));
    expect(document.media.map((media: { contentType: string }) => media.contentType).sort()).toEqual(['audio/ogg', 'image/png']);
    const link = new URL(document.media[0].link);
    expect((await harness.http.get(link.pathname + link.search)).status).toBe(200);
    expect(document.ratings).toEqual([expect.objectContaining({ score: 4, comment: `Quick and clear, thank you from ${maya.name}` })]);
    expect(document.handoffs).toHaveLength(1);
    expect(document.notices.length).toBeGreaterThan(0);
    expect(document.takeoverLines.map((line: { text: string }) => line.text).join('\n')).toContain(`TRK-${maya.userId}`);
    expect(document.suggestions).toHaveLength(1);
    expect(document.redis['unanswered questions']).toEqual(
      expect.arrayContaining([expect.objectContaining({ question: `Does the warranty cover the blender of ${maya.name}?` })]),
    );
    // The support role's facts (the issue it learned from her words).
    const state = Object.entries(document.redis).filter(([family]) => family.startsWith('asst:state:'));
    expect(JSON.stringify(state)).toContain(maya.name);
    // The service's logs name her by opaque ids only; the export says which.
    expect(harness.logs.filter((line) => needlesOf(maya).some((needle) => JSON.stringify(line).includes(needle)))).toEqual([]);
    const logId = document.logIds[maya.address];
    expect(logId).toMatch(/^~[0-9a-f]{16}$/);
    expect(harness.logs.some((line) => line.event === 'turn-answered' && line.conversationKey === logId)).toBe(true);
    oldLink = harness.services.transcriptLinks.url(maya.address);
    expect((await open(oldLink)).text).toContain(maya.texts[0]);
    // Bob is nowhere in Maya's export.
    expect(JSON.stringify(document)).not.toContain(bob.number);
  });

  test('the erasure leaves none of the person in any store, and the other person whole', async () => {
    // A confirmed change as the transcript writer records it: the business keeps its outcome, not the person.
    const action = {
      _id: 'act-maya-1',
      conversationId: maya.address,
      channel: 'whatsapp',
      tool: 'update_address',
      title: `Change the address of ${maya.name}`,
      effect: 'reversible',
      args: { email: maya.email },
      summary: `Change the address of ${maya.name} to 1 Harbour Lane`,
      state: 'done',
      proposedBy: { address: maya.address, roleId: 'support', runId: 'run-1' },
      calls: 1,
      createdAt: new Date(),
      updatedAt: new Date(),
    };
    await harness.services.mongo.collection<{ _id: string }>('actions').insertOne(action);
    expect((await scanStores(harness, needlesOf(maya))).length).toBeGreaterThan(0);
    // Her rated WhatsApp chat, and her widget chat too once its question was asked (a loaded machine gets there first).
    const ratings = await harness.services.mongo.collection('csat').countDocuments({ conversationId: { $ne: bob.address } });
    expect([1, 2]).toContain(ratings);
    const response = await admin(harness).post(`/admin/people/${encodeURIComponent(maya.address)}/erase`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'done', requestedBy: 'admin', nothing: false });
    expect(response.body.counts.mongo).toMatchObject({ messages: expect.any(Number), conversations: 2, csat: ratings, handoffs: 1, media: 2, contacts: 1 });
    expect(response.body.plan).toBeUndefined();

    const kept = await harness.services.mongo.collection<{ _id: string }>('actions').findOne({ _id: 'act-maya-1' });
    expect(kept).toEqual({
      _id: 'act-maya-1',
      conversationId: `erased:${response.body._id}`,
      channel: 'whatsapp',
      tool: 'update_address',
      effect: 'reversible',
      state: 'done',
      calls: 1,
      createdAt: expect.any(Date),
      updatedAt: expect.any(Date),
    });
    const hits = await scanStores(harness, needlesOf(maya));
    expect(hits).toEqual([]);
    // Her unanswered question was erased from its usage entry before any fold listed it; Bob's is listed when the owner looks.
    const listed = await admin(harness).get('/admin/knowledge/misses');
    expect(listed.status).toBe(200);
    const questions = (listed.body as { misses: { question: string }[] }).misses.map((miss) => miss.question);
    expect(questions).toContain(bob.texts[0]);
    expect(questions.filter((question) => question.includes(maya.name))).toEqual([]);
    const bobHits = await scanStores(harness, needlesOf(bob));
    expect(bobHits.some((hit) => hit.where === 'asst:knowledge:misses' && hit.needle === bob.texts[0])).toBe(true);
    expect(bobHits.some((hit) => hit.store === 'mongo:messages' && hit.needle === bob.texts[0])).toBe(true);
    expect(bobHits.some((hit) => hit.store === 'mongo:contacts')).toBe(true);
    // The contact index names its entries by keyed hashes: Bob's e-mail and user id are in no key name.
    const names = await harness.services.redis.keys('*');
    expect(names.filter((name) => name.includes(bob.email) || name.includes(bob.userId) || (name.includes('contact') && name.includes(bob.number)))).toEqual(
      [],
    );
    // Bob's rating question was scheduled under a job id nobody holding his number can recompute.
    await eventually(() => harness.twilio.messages.some((message) => message.to === bob.address && message.choices?.length === 5) || undefined, 20_000);
    expect(await scanStores(harness, [createHash('sha256').update(bob.address).digest('hex').slice(0, 24)])).toEqual([]);
    // A transcript link signed before the erasure no longer works.
    const revoked = await open(oldLink);
    expect(revoked.status).toBe(410);
    expect(revoked.text).toBe('This link no longer works\n');
  }, 60_000);

  test('erasing again is a 200 with nothing to do; the records list who asked and how many', async () => {
    const again = await admin(harness).post(`/admin/people/${encodeURIComponent(maya.address)}/erase`);
    expect(again.status).toBe(200);
    expect({ ...again.body, counts: undefined }).toMatchObject({ status: 'done', nothing: true });
    expect(again.body.counts).toEqual({ mongo: {}, queues: {}, redis: {} });
    const listed = await admin(harness).get('/admin/people/erasures');
    expect(listed.status).toBe(200);
    expect(listed.body.erasures).toHaveLength(2);
    expect(listed.body.erasures[1]).toMatchObject({ requestedBy: 'admin', status: 'done', counts: { mongo: expect.any(Object) } });
    expect(JSON.stringify(listed.body)).not.toContain(maya.number);
  }, 30_000);

  test('a message after the erasure starts a new, empty conversation', async () => {
    await harness.sendWhatsapp({ from: maya.address, body: 'Hello again' });
    await eventually(
      async () => (await harness.services.transcripts.recent(maya.address)).some((entry) => entry.text === 'Happy to help: Hello again') || undefined,
      20_000,
    );
    expect((await harness.services.transcripts.recent(maya.address)).map((entry) => entry.text)).toEqual(['Hello again', 'Happy to help: Hello again']);
    // The old link still opens nothing; a link signed now shows the new conversation only.
    expect((await open(oldLink)).status).toBe(410);
    await transcriptsWritten(harness.services);
    const fresh = await open(harness.services.transcriptLinks.url(maya.address, new Date(Date.now() + 2000)));
    expect(fresh.status).toBe(200);
    expect(fresh.text).toContain('Hello again');
    expect(fresh.text).not.toContain(maya.texts[0]);
  }, 30_000);
});

describe('an anonymous widget visitor', () => {
  test('named by the visitor id: every chat of theirs is exported and erased', async () => {
    const session = await harness.http.post('/api/widget/session').set('Origin', 'https://people-shop.example.test').send({ siteKey: 'people-site' });
    expect(session.status).toBe(200);
    const { token, visitorId, conversationId } = session.body as { token: string; visitorId: string; conversationId: string };
    const text = 'Anonymous visitor asks about the walnut desk';
    const sent = await harness.http
      .post('/api/widget/messages')
      .set('Origin', 'https://people-shop.example.test')
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: 'visitor-1', text });
    expect(sent.status).toBe(202);
    await eventually(
      async () => (await harness.services.transcripts.recent(conversationId)).some((entry) => entry.text === `Happy to help: ${text}`) || undefined,
      20_000,
    );
    await turnsSettled(harness.services);
    await transcriptsWritten(harness.services);

    const id = `web:people-site:${visitorId}`;
    const exported = await admin(harness).get(`/admin/people/${encodeURIComponent(id)}/export`);
    expect(exported.status).toBe(200);
    expect(exported.body.conversations.map((conversation: { key: string }) => conversation.key)).toEqual([conversationId]);
    const erased = await admin(harness).post(`/admin/people/${encodeURIComponent(id)}/erase`);
    expect(erased.status).toBe(200);
    expect(erased.body.counts.mongo).toMatchObject({ conversations: 1 });
    expect(await scanStores(harness, [text, visitorId])).toEqual([]);
  }, 60_000);
});
