/**
 * The generic turn as a feature: the roster checked against the enabled channels' tools, the
 * model providers (from the configuration, with per-provider circuit breakers shared through
 * Redis; a model handed in by a test has none) and the orchestrator's state stores.
 */
import type { Config } from '../config.js';
import type { ChannelDefinition, RoleDefinition } from '../contracts/index.js';
import type { Infrastructure } from '../infrastructure.js';
import { createProviderBreakers } from '../model/provider-breaker.js';
import { createConfiguredModelProvider, type ModelProvider } from '../model/provider.js';
import { validateRoster } from './define-role.js';
import { createOrchestrator, type OrchestratorOptions } from './run-turn.js';
import { createConversationState } from './state/conversation-state.js';
import { createDecisionStore } from './state/decision-store.js';
import { createFactStore } from './state/fact-store.js';

export function createOrchestratorFeature(
  infra: Infrastructure,
  config: Pick<Config, 'model'>,
  deps: {
    roles: readonly RoleDefinition[];
    channels: ReadonlyMap<string, ChannelDefinition>;
    /** A test's model provider (no breakers then; the configured providers otherwise), and its breakers' namespace in Redis. */
    overrides: { models?: ModelProvider | undefined; modelBreakerScope?: string | undefined };
  } & Pick<OrchestratorOptions, 'mcpTools' | 'usage' | 'resumeUnlisted' | 'staleTap' | 'knowledge' | 'feedback' | 'guidance'>,
) {
  const { redis } = infra;
  const { roles, channels, overrides, ...hooks } = deps;
  const { models, modelBreakerScope: breakerScope } = overrides;
  validateRoster(roles, new Set([...channels.values()].flatMap((channel) => channel.tools.map((tool) => tool.name))));
  return createOrchestrator({
    roles,
    models: models ?? createConfiguredModelProvider(config.model),
    // Per provider and shared by every worker; a model handed in by a test has none.
    ...(models
      ? {}
      : {
          breakers: createProviderBreakers({
            redis,
            failures: config.model.breaker.failures,
            cooldownMs: config.model.breaker.cooldownMs,
            ...(breakerScope ? { scope: breakerScope } : {}),
          }),
        }),
    limits: config.model,
    logger: infra.logger,
    metrics: infra.metrics,
    facts: createFactStore(redis),
    state: createConversationState(redis),
    decisions: createDecisionStore(redis),
    ...hooks,
  });
}
