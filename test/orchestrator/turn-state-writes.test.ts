/**
 * The state a turn writes without waiting for it: a first turn's reset (one DEL, sent ahead of
 * every later write on the conversation's keys) and the pointer to the role the judge routed to
 * (sent as the reply is asked for). Neither is awaited where it is sent, so each must still fail
 * the turn when it fails: the worker then stores and sends nothing, and retries the message.
 * Reads started ahead by the worker (`startReads`) are the turn's one identify and one state read.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createCliChannel } from '../../channels/cli/index.js';
import type { ChannelDefinition } from '../../src/contracts/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createOrchestrator } from '../../src/orchestrator/run-turn.js';
import { createConversationState, type ConversationState } from '../../src/orchestrator/state/conversation-state.js';
import { createDecisionStore } from '../../src/orchestrator/state/decision-store.js';
import { createFactStore, type FactStore } from '../../src/orchestrator/state/fact-store.js';
import { roster } from '../../roles/index.js';
import { createDeterministicModels, judgeRoutingTo } from '../support/deterministic-model.js';
import { turnInput } from '../support/turn-input.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL!);
});
afterAll(async () => {
  await redis.quit();
});

function orchestratorWith(overrides: { facts?: Partial<FactStore>; state?: Partial<ConversationState> }, replies: string[]) {
  const logger = createLogger({ level: 'error', sink: () => undefined });
  const models = createDeterministicModels(({ userText }) => {
    replies.push(userText);
    return { text: `Answer to: ${userText}` };
  }, judgeRoutingTo('sales'));
  return createOrchestrator({
    roles: roster,
    models,
    limits: { maxSteps: 5, maxOutputTokens: 512, timeoutMs: 10_000 },
    logger,
    metrics: createMetrics(),
    facts: { ...createFactStore(redis), ...overrides.facts },
    state: { ...createConversationState(redis), ...overrides.state },
    decisions: createDecisionStore(redis),
  });
}

const channel = createCliChannel({ write: () => undefined });

describe('state a turn writes without waiting for it', () => {
  test('a failed write of the role pointer fails the turn, though the reply was already asked for', async () => {
    const replies: string[] = [];
    const orchestrator = orchestratorWith({ facts: { writeActiveRole: () => Promise.reject(new Error('Redis write refused')) } }, replies);
    await expect(
      orchestrator.runTurn(channel, turnInput(`cli:pointer-${randomUUID()}`, 'how much is the business plan?', { firstTurn: false })),
    ).rejects.toThrow('Redis write refused');
  });

  test("a failed reset of a first turn's state fails the turn", async () => {
    const replies: string[] = [];
    const orchestrator = orchestratorWith({ state: { reset: () => Promise.reject(new Error('Redis reset refused')) } }, replies);
    await expect(orchestrator.runTurn(channel, turnInput(`cli:reset-${randomUUID()}`, 'hello'))).rejects.toThrow('Redis reset refused');
  });

  test('a failed reset fails a first turn the service answers in its own words too (a tap with no question pending)', async () => {
    const orchestrator = orchestratorWith({ state: { reset: () => Promise.reject(new Error('Redis reset refused')) } }, []);
    const input = turnInput(`cli:tap-${randomUUID()}`, '');
    const tapped = { ...input, tap: { text: 'Yes', choice: 'confirm', receivedAt: Date.now(), history: [] } };
    await expect(orchestrator.runTurn(channel, tapped)).rejects.toThrow('Redis reset refused');
  });

  test('reads started ahead are the turn’s one identify and one state read', async () => {
    const calls = { identify: 0, readTurnStart: 0 };
    const state = createConversationState(redis);
    const counted: ChannelDefinition = {
      ...channel,
      identify: async () => {
        calls.identify += 1;
        return { name: 'Ana', customerId: 'CUST-1', entities: [] };
      },
    };
    const orchestrator = orchestratorWith(
      {
        state: {
          readTurnStart: (...args) => {
            calls.readTurnStart += 1;
            return state.readTurnStart(...args);
          },
        },
      },
      [],
    );
    const conversationId = `cli:reads-${randomUUID()}`;
    const input = turnInput(conversationId, 'how much is the business plan?', { firstTurn: false });
    const reads = orchestrator.startReads(counted, conversationId, input.inbound);
    const result = await orchestrator.runTurn(counted, input, reads);
    expect(result.text).toBe('Answer to: how much is the business plan?');
    expect(calls).toEqual({ identify: 1, readTurnStart: 1 });
  });
});
