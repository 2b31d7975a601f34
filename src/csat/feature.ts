/** The satisfaction question built from the shared infrastructure (the composition root's one call). */
import type { Config } from '../config.js';
import type { ChannelDefinition } from '../contracts/index.js';
import type { HandoffStore } from '../handoff/handoff-store.js';
import type { Infrastructure } from '../infrastructure.js';
import type { TakeoverService } from '../takeover/takeover.js';
import { createCsatRuntime } from './csat-runtime.js';

export function createCsatFeature(
  infra: Infrastructure,
  config: Pick<Config, 'csat'>,
  deps: { channels: ReadonlyMap<string, ChannelDefinition>; takeover: TakeoverService; handoffs: HandoffStore },
) {
  const { redis, mongo, logger, metrics } = infra;
  return createCsatRuntime({
    config: config.csat,
    redis,
    mongo,
    connection: infra.bull,
    prefix: infra.queuePrefix,
    channels: deps.channels,
    logger,
    metrics,
    heldByTeammate: async (conversationKey) => (await deps.takeover.current(conversationKey)) !== undefined,
    handoffOpen: async (conversationKey) => (await deps.handoffs.activeFor(conversationKey)).length > 0,
    handoffRole: async (handoffId) => (await deps.handoffs.get(handoffId))?.roleId,
    whenStoreReady: (name, task) => infra.mongoLink.whenConnected(name, task),
  });
}
