/**
 * A deployment with no source, document or FAQ has no knowledge step: the judge is not asked
 * whether a turn needs the business's knowledge, the reply gets no "I don't have that
 * information" instructions and no miss is counted or listed. The first FAQ entry turns it on
 * without a restart.
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

/** A judge that marks every turn it is asked about as needing knowledge. */
const judge: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  json.route = 'support';
  json.inScope = true;
  if ('knowledge' in json) json.knowledge = { needed: true, terms: 'delivery times' };
  return { text: JSON.stringify(json) };
};

describe('no knowledge at all', () => {
  let rig: KnowledgeRig;
  const channel: ChannelDefinition = { ...createCliChannel({ write: () => undefined }), capabilityTools: { handoff: 'open_support_chat' } };
  const models = createDeterministicModels(() => ({ text: 'Hello.' }), judge);
  let orchestrator: ReturnType<typeof createOrchestrator>;

  beforeAll(async () => {
    rig = await startKnowledgeRig({ redisUrl: await ownKnowledgeRedisUrl(), mongoUri: knowledgeMongoUri() });
    orchestrator = createOrchestrator({
      roles: roster,
      models,
      limits: { maxSteps: 5, maxOutputTokens: 512, timeoutMs: 10_000 },
      logger: quiet,
      metrics: rig.metrics,
      facts: createFactStore(rig.redis),
      state: createConversationState(rig.redis),
      decisions: createDecisionStore(rig.redis),
      mcpTools: rig.feature.tools,
      knowledge: rig.feature.turn,
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  const turn = async (text: string) => {
    const conversationId = `n-${randomUUID()}`;
    const before = models.calls.length;
    const result = await orchestrator.runTurn(channel, turnInput(conversationId, text, { channelId: channel.id }));
    // Its reply delivered: the worker's finish (where a miss would be recorded).
    await orchestrator.finishTurn(channel, result, true);
    return { judge: models.calls[before]!.system, reply: models.replyCalls().at(-1)!.system };
  };

  it('asks the judge nothing of knowledge, says no "I don\'t know" and counts no miss; the first FAQ entry turns it on', async () => {
    const empty = await turn('how long will my parcel take to arrive?');
    expect(empty.judge).not.toContain('knowledge: needed');
    expect(empty.reply).not.toContain('has nothing on this question');
    expect(empty.reply).not.toContain("don't have that information");
    expect(rig.metrics.value('knowledge_misses_total', { role: 'support' }) ?? 0).toBe(0);
    const misses = await request(rig.app)
      .get('/admin/knowledge/misses')
      .set({ Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` });
    expect((misses.body as { misses: unknown[] }).misses).toEqual([]);

    await rig.feature.service.addFaq([{ question: 'How long does delivery take?', answer: 'Standard delivery takes 2 to 3 business days.' }]);
    const stocked = await turn('how long will my parcel take to arrive?');
    expect(stocked.judge).toContain('knowledge: needed');
    expect(stocked.reply).toContain('Standard delivery takes 2 to 3 business days.');
  });
});
