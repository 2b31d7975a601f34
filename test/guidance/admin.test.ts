/**
 * `/admin/guidance` on real FerretDB and Redis: entries are created, edited and deleted in the
 * draft with the admin bearer token; bad input is a clear 4xx; publishing makes the whole draft
 * the next version, every version is kept, and a rollback publishes an earlier one's entries.
 */
import request from 'supertest';
import { knowledgeMongoUri, ownKnowledgeRedisUrl } from '../support/knowledge-rig.js';
import { GUIDANCE_ADMIN_TOKEN, startGuidanceRig, type GuidanceRig } from '../support/guidance-rig.js';

const auth = { Authorization: `Bearer ${GUIDANCE_ADMIN_TOKEN}` };

describe('/admin/guidance', () => {
  let rig: GuidanceRig;
  beforeAll(async () => {
    rig = await startGuidanceRig({ redisUrl: await ownKnowledgeRedisUrl(), mongoUri: knowledgeMongoUri() });
  }, 30_000);
  afterAll(async () => rig?.close());

  const create = (body: unknown) =>
    request(rig.app)
      .post('/admin/guidance/entries')
      .set(auth)
      .send(body as object);

  it('refuses a request without the token', async () => {
    const response = await request(rig.app).get('/admin/guidance');
    expect(response.status).toBe(401);
  });

  it('refuses bad entries with the reason', async () => {
    const tooLong = await create({ category: 'policy', text: 'x'.repeat(2001) });
    expect(tooLong.status).toBe(400);
    expect(JSON.stringify(tooLong.body)).toContain('text');
    expect((await create({ category: 'tone', text: 'Be brief.' })).status).toBe(400);
    const teamOnPolicy = await create({ category: 'policy', text: 'Refunds go to support.', team: 'support' });
    expect(teamOnPolicy.status).toBe(400);
    expect(JSON.stringify(teamOnPolicy.body)).toContain('only an escalation entry names a team');
    const unknownRole = await create({ category: 'style', text: 'Be brief.', scope: { roles: ['pirate'] } });
    expect(unknownRole.status).toBe(400);
    expect(unknownRole.body).toMatchObject({ error: expect.stringContaining('unknown role: pirate') as string });
    const placeholder = await create({ category: 'style', text: 'Hi {{contact.phone}}', scope: {} });
    expect(placeholder.status).toBe(400);
    expect(JSON.stringify(placeholder.body)).toContain('unknown placeholder {{contact.phone}}');
    const claimed = await create({ category: 'style', text: 'Be brief.', scope: { audience: { says: 'vip' } } });
    expect(claimed.status).toBe(400);
    expect((await request(rig.app).delete('/admin/guidance/entries/nope').set(auth)).status).toBe(400);
    expect((await request(rig.app).delete('/admin/guidance/entries/g_000000000000').set(auth)).status).toBe(404);
    const notJson = await request(rig.app).post('/admin/guidance/entries').set(auth).set('Content-Type', 'text/plain').send('hello');
    expect(notJson.status).toBe(415);
    expect((await request(rig.app).post('/admin/guidance/rollback').set(auth).send({ version: 99 })).status).toBe(404);
  });

  it('edits a draft, publishes it whole, keeps every version and rolls back', async () => {
    const brief = await create({ category: 'style', text: 'Answer in two sentences on WhatsApp.', scope: { channels: ['whatsapp'] } });
    expect(brief.status).toBe(201);
    const dates = await create({ category: 'policy', text: 'Never promise a delivery date.' });
    expect(dates.status).toBe(201);
    const briefId = (brief.body as { id: string }).id;
    const datesId = (dates.body as { id: string }).id;

    let overview = await request(rig.app).get('/admin/guidance').set(auth);
    expect(overview.body).toMatchObject({ unpublished: true, versions: [] });
    expect(rig.feature.turn.brief({ roleId: 'support', channel: 'whatsapp', site: undefined, contact: undefined, applying: [] }).entries).toEqual([]);

    const first = await request(rig.app).post('/admin/guidance/publish').set(auth);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ version: 1, entries: 2 });
    expect(rig.feature.turn.brief({ roleId: 'support', channel: 'whatsapp', site: undefined, contact: undefined, applying: [] }).entries.sort()).toEqual(
      [briefId, datesId].sort(),
    );

    // An edit and a delete stay in the draft until published.
    const edited = await request(rig.app)
      .put(`/admin/guidance/entries/${briefId}`)
      .set(auth)
      .send({ category: 'style', text: 'Answer in one sentence on WhatsApp.', scope: { channels: ['whatsapp'] } });
    expect(edited.status).toBe(200);
    expect((await request(rig.app).delete(`/admin/guidance/entries/${datesId}`).set(auth)).status).toBe(204);
    const live = rig.feature.turn.brief({ roleId: 'support', channel: 'whatsapp', site: undefined, contact: undefined, applying: [] });
    expect(live.section).toContain('Answer in two sentences on WhatsApp.');
    expect(live.section).toContain('Never promise a delivery date.');

    expect((await request(rig.app).post('/admin/guidance/publish').set(auth)).body).toMatchObject({ version: 2, entries: 1 });
    const second = rig.feature.turn.brief({ roleId: 'support', channel: 'whatsapp', site: undefined, contact: undefined, applying: [] });
    expect(second.section).toContain('Answer in one sentence on WhatsApp.');
    expect(second.section).not.toContain('delivery date');

    const rolledBack = await request(rig.app).post('/admin/guidance/rollback').set(auth).send({ version: 1 });
    expect(rolledBack.status).toBe(201);
    expect(rolledBack.body).toMatchObject({ version: 3, restoredFrom: 1, entries: 2 });
    const third = rig.feature.turn.brief({ roleId: 'support', channel: 'whatsapp', site: undefined, contact: undefined, applying: [] });
    expect(third.section).toContain('Answer in two sentences on WhatsApp.');
    expect(third.section).toContain('Never promise a delivery date.');

    overview = await request(rig.app).get('/admin/guidance').set(auth);
    expect(overview.body).toMatchObject({ versions: [1, 2, 3], live: { version: 3 } });
    const kept = await request(rig.app).get('/admin/guidance/versions/2').set(auth);
    expect(kept.status).toBe(200);
    expect((kept.body as { entries: { text: string }[] }).entries.map((entry) => entry.text)).toEqual(['Answer in one sentence on WhatsApp.']);
  });
});
