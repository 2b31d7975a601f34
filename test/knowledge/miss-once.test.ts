/**
 * A knowledge miss counts once per customer message: the turn that answers a message may run
 * again (the queue retries a turn that failed after its miss, e.g. a reply that could not be
 * stored), and only the run whose reply is finished (the worker's finish, once per reply: its
 * metering's step) lists it, counts it in `knowledge_misses_total` and tells the reports.
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createCliChannel } from '../../channels/cli/index.js';
import { roster } from '../../roles/index.js';
import type { ChannelDefinition } from '../../src/contracts/index.js';
import { createLogger } from '../../src/logger.js';
import { createOrchestrator } from '../../src/orchestrator/run-turn.js';
import { createConversationState } from '../../src/orchestrator/state/conversation-state.js';
import { createDecisionStore } from '../../src/orchestrator/state/decision-store.js';
import { createFactStore } from '../../src/orchestrator/state/fact-store.js';
import { createDeterministicModels, schemaDefault, type Script } from '../support/deterministic-model.js';
import { KNOWLEDGE_ADMIN_TOKEN, knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';
import { turnInput } from '../support/turn-input.js';

const quiet = createLogger({ level: 'error', sink: () => undefined });
const auth = { Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` };

/** Routes to support; every question needs the business's knowledge. */
const judge: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  json.route = 'support';
  json.inScope = true;
  if ('knowledge' in json) json.knowledge = { needed: true, terms: '' };
  return { text: JSON.stringify(json) };
};

describe('a knowledge miss, once per customer message', () => {
  let rig: KnowledgeRig;
  const told: { channel: string; messageKey: string }[] = [];
  const channel: ChannelDefinition = { ...createCliChannel({ write: () => undefined }), capabilityTools: { handoff: 'open_support_chat' } };
  const models = createDeterministicModels(() => ({ text: 'I do not know that one.' }), judge);
  let orchestrator: ReturnType<typeof createOrchestrator>;

  beforeAll(async () => {
    rig = await startKnowledgeRig({ redisUrl: await ownKnowledgeRedisUrl(), mongoUri: knowledgeMongoUri(), onMiss: (miss) => told.push(miss) });
    await rig.feature.service.addFaq([
      { question: 'How long does delivery take?', answer: 'Delivery takes 2 to 3 business days.', url: 'https://help.example/shipping' },
    ]);
    orchestrator = createOrchestrator({
      roles: roster,
      models,
      limits: { maxSteps: 5, maxOutputTokens: 512, timeoutMs: 10_000 },
      logger: quiet,
      metrics: rig.metrics,
      facts: createFactStore(rig.redis),
      state: createConversationState(rig.redis),
      decisions: createDecisionStore(rig.redis),
      knowledge: rig.feature.turn,
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  /** One run of the turn answering `messageId` (the queue runs it again for the same message after a failure). */
  const run = (conversationId: string, messageId: string, text: string, firstTurn: boolean) =>
    orchestrator.runTurn(channel, turnInput(conversationId, text, { channelId: channel.id, firstTurn, messageId }));
  const listed = async () => {
    const response = await request(rig.app).get('/admin/knowledge/misses').set(auth);
    expect(response.status).toBe(200);
    return (response.body as { misses: { question: string }[] }).misses.map((miss) => miss.question);
  };

  it('a turn run again for the same message lists, counts and reports its miss once: with the finish of the reply that goes out', async () => {
    const conversationId = `miss-${randomUUID()}`;
    const question = 'Do you rent surfboards in winter?';
    const first = await run(conversationId, 'SM-surf-1', question, true);
    expect(first.text).toBe('I do not know that one.');
    expect(first.knowledgeMiss).toMatchObject({ question, messageKey: `${channel.id}:SM-surf-1` });
    // The reply could not be stored: the queue retries the batch, and the turn runs again for the same message.
    const retried = await run(conversationId, 'SM-surf-1', question, true);
    expect(retried.text).toBe('I do not know that one.');
    // A run lists nothing: only the finish of the reply that goes out does (once per reply).
    expect((await listed()).filter((listedQuestion) => listedQuestion === question)).toHaveLength(0);
    await orchestrator.finishTurn(channel, retried, true);

    expect((await listed()).filter((listedQuestion) => listedQuestion === question)).toHaveLength(1);
    expect(rig.metrics.value('knowledge_misses_total', { role: 'support' })).toBe(1);
    expect(told).toEqual([{ channel: channel.id, messageKey: `${channel.id}:SM-surf-1` }]);

    // The customer's next message, unanswered too, is a miss of its own.
    await orchestrator.finishTurn(channel, await run(conversationId, 'SM-surf-2', 'And kayaks?', false), true);
    expect((await listed()).slice(0, 2)).toEqual(['And kayaks?', question]);
    expect(rig.metrics.value('knowledge_misses_total', { role: 'support' })).toBe(2);
    expect(told.map((miss) => miss.messageKey)).toEqual([`${channel.id}:SM-surf-1`, `${channel.id}:SM-surf-2`]);
  });
});
