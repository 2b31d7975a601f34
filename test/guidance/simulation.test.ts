/**
 * Simulations on the scripted model: a simulated customer (from the scenario's words) converses
 * with the real turn for the draft or the live guidance, then one grading call judges each
 * criterion with its reason. A scenario passes against a draft that tells the return window and
 * fails against the published set that does not (the verdict that flipped is named); a scenario
 * whose criterion nothing met fails with the grader's reason. Its model calls are metered apart.
 * With GUIDANCE_PUBLISH_REQUIRES_PASS, a publish that would break a scenario is refused.
 */
import request from 'supertest';
import { createDeterministicModels, schemaDefault, type Script } from '../support/deterministic-model.js';
import { GUIDANCE_ADMIN_TOKEN, startGuidanceRig, type GuidanceRig } from '../support/guidance-rig.js';
import { knowledgeMongoUri, ownKnowledgeRedisUrl } from '../support/knowledge-rig.js';

const auth = { Authorization: `Bearer ${GUIDANCE_ADMIN_TOKEN}` };

/** The simulated customer asks once, then ends; the assistant says what its guidance tells it. */
const script: Script = ({ system, userText }) => {
  if (system.includes('You play a customer')) return { text: userText.includes('Customer:') ? 'END' : 'Can I still return the shoes I bought last week?' };
  return { text: system.includes('Returns are accepted within 30 days') ? 'Yes: returns are accepted within 30 days of delivery.' : 'I am not sure, sorry.' };
};

/** Routes to support; grades "30 days" on the transcript's words, and a hand-off as never met. */
const judge: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  if ('verdicts' in json) {
    const criteria = [...call.system.matchAll(/^\d+\. (.*)$/gm)].map((match) => match[1] ?? '');
    const verdicts = criteria.map((criterion) =>
      /30 days/.test(criterion)
        ? {
            passed: call.userText.includes('within 30 days'),
            reason: call.userText.includes('within 30 days') ? 'The assistant said 30 days.' : 'No return window was given.',
          }
        : { passed: false, reason: 'Nobody handed the conversation to support.' },
    );
    return { text: JSON.stringify({ verdicts }) };
  }
  if ('route' in json) json.route = 'support';
  if ('inScope' in json) json.inScope = true;
  return { text: JSON.stringify(json) };
};

describe('simulations', () => {
  let rig: GuidanceRig;
  const models = createDeterministicModels(script, judge);
  beforeAll(async () => {
    rig = await startGuidanceRig({ redisUrl: await ownKnowledgeRedisUrl(), mongoUri: knowledgeMongoUri(), models });
    const added = await request(rig.app)
      .post('/admin/guidance/entries')
      .set(auth)
      .send({ category: 'policy', text: 'Returns are accepted within 30 days of delivery.' });
    expect(added.status).toBe(201);
  }, 30_000);
  afterAll(async () => rig?.close());

  const returns = {
    name: 'return window',
    channel: 'web',
    persona: 'A customer who bought shoes last week and wants to know whether they can still return them.',
    criteria: ['is told the return window is 30 days'],
  };
  const run = (body: object) => request(rig.app).post('/admin/simulations/run').set(auth).send(body);

  it('passes against the draft, fails against the published set, and names what flipped', async () => {
    const draft = await run({ scenarios: [returns] });
    expect(draft.status).toBe(200);
    const [passed] = (draft.body as { results: { passed: boolean; conversation: unknown[]; verdicts: unknown[]; flipped: string[] }[] }).results;
    expect(passed).toMatchObject({
      passed: true,
      conversation: [
        { from: 'customer', text: 'Can I still return the shoes I bought last week?' },
        { from: 'assistant', text: 'Yes: returns are accepted within 30 days of delivery.' },
      ],
      verdicts: [{ criterion: 'is told the return window is 30 days', passed: true, reason: 'The assistant said 30 days.' }],
      flipped: [],
    });

    const published = await run({ scenarios: [returns], against: 'published' });
    expect(published.body).toMatchObject({
      passed: false,
      results: [{ passed: false, verdicts: [{ passed: false, reason: 'No return window was given.' }], flipped: ['is told the return window is 30 days'] }],
    });
    expect(rig.metrics.value('simulation_model_calls_total', { purpose: 'customer' })).toBe(4);
    expect(rig.metrics.value('simulation_model_calls_total', { purpose: 'judge' })).toBe(2);
    expect(rig.metrics.value('simulation_model_calls_total', { purpose: 'reply' })).toBe(2);
    expect(rig.metrics.value('simulation_model_calls_total', { purpose: 'grade' })).toBe(2);
    // The simulated turns count nowhere else: no judge call, no turn, no guidance applied in the service's metrics.
    expect(rig.metrics.value('judge_calls_total', { outcome: 'ok' })).toBe(0);
    expect(rig.metrics.value('model_calls_total', { purpose: 'reply' })).toBe(0);
  });

  it('fails a criterion nothing met, with the grader’s reason; a bad scenario is a 400', async () => {
    const handed = await run({ scenarios: [{ ...returns, name: 'chargeback', criteria: ['is handed to support'] }] });
    expect(handed.body).toMatchObject({
      passed: false,
      results: [{ verdicts: [{ criterion: 'is handed to support', passed: false, reason: 'Nobody handed the conversation to support.' }] }],
    });
    const bad = await run({ scenarios: [{ name: 'x', persona: 'short', criteria: [] }] });
    expect(bad.status).toBe(400);
    expect(
      (
        await request(rig.app)
          .post('/admin/simulations/run')
          .send({ scenarios: [returns] })
      ).status,
    ).toBe(401);
  });

  it('refuses a publish that breaks a scenario when publishing requires passing ones', async () => {
    const strict = await startGuidanceRig({
      redisUrl: await ownKnowledgeRedisUrl(),
      mongoUri: knowledgeMongoUri(),
      models,
      config: { publishRequiresPass: true },
    });
    try {
      const post = (text: string) => request(strict.app).post('/admin/guidance/entries').set(auth).send({ category: 'policy', text });
      const window = await post('Returns are accepted within 30 days of delivery.');
      expect(
        (
          await request(strict.app)
            .post('/admin/simulations/run')
            .set(auth)
            .send({ scenarios: [returns] })
        ).body,
      ).toMatchObject({ passed: true });
      expect((await request(strict.app).post('/admin/guidance/publish').set(auth)).status).toBe(201);

      // The return window's entry removed: the scenario would fail, so the draft is not published.
      expect(
        (
          await request(strict.app)
            .delete(`/admin/guidance/entries/${(window.body as { id: string }).id}`)
            .set(auth)
        ).status,
      ).toBe(204);
      expect((await post('Be brief.')).status).toBe(201);
      const refused = await request(strict.app).post('/admin/guidance/publish').set(auth);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        error: '1 scenario(s) fail against the draft: publishing needs all to pass',
        failed: [{ scenario: 'return window', failed: [{ criterion: 'is told the return window is 30 days', reason: 'No return window was given.' }] }],
      });
      expect((await request(strict.app).get('/admin/guidance').set(auth)).body).toMatchObject({ versions: [1] });
    } finally {
      await strict.close();
    }
  });
});
