/** The satisfaction question built from the shared infrastructure (the composition root's one call). */
import type { Config } from '../config.js';
import type { ChannelDefinition } from '../contracts/index.js';
import type { HandoffStore } from '../handoff/handoff-store.js';
import type { Infrastructure } from '../infrastructure.js';
import { createConversationState } from '../orchestrator/state/conversation-state.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import type { TakeoverService } from '../takeover/takeover.js';
import { createCsatRuntime } from './csat-runtime.js';

export function createCsatFeature(
  infra: Infrastructure,
  config: Pick<Config, 'csat' | 'transcriptLinks'>,
  deps: { channels: ReadonlyMap<string, ChannelDefinition>; takeover: TakeoverService; handoffs: HandoffStore; transcripts: TranscriptStore },
) {
  const { redis, mongo, logger, metrics } = infra;
  const orchestratorState = createConversationState(redis);
  return createCsatRuntime({
    config: config.csat,
    redis,
    mongo,
    transcripts: deps.transcripts,
    channels: deps.channels,
    logger,
    metrics,
    heldByTeammate: async (conversationKey) => (await deps.takeover.current(conversationKey)) !== undefined,
    handoffOpen: async (conversationKey) => (await deps.handoffs.activeFor(conversationKey)).length > 0,
    // A choice or a confirmation the assistant asked and nobody answered yet.
    questionWaiting: async (conversationKey) => {
      const { pending } = await orchestratorState.readTurnStart(conversationKey);
      return pending !== undefined && pending.answeredBy === undefined;
    },
    handoffRole: async (handoffId) => (await deps.handoffs.get(handoffId))?.roleId,
    whenStoreReady: (name, task) => infra.mongoLink.whenConnected(name, task),
  });
}
