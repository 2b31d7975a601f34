/**
 * Step 7, after the reply was delivered: evidence rules turn the leg's tool calls into facts,
 * `afterTurn` derives more (only for a fully delivered reply), and the role's KPI is logged.
 * At most two more `remember()`s. A broken hook or a Redis error is logged and swallowed: a
 * delivered reply is never turned into a failure or a retry.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, Facts, PostTurnInput, RoleDefinition } from '../contracts/index.js';
import type { FactStore, VersionedFacts } from './state/fact-store.js';
import { capabilityResolver } from './system-prompt.js';

export interface PostTurnDependencies {
  facts: FactStore;
  logger: Logger;
  metrics: Metrics;
}

function evidence(role: RoleDefinition, input: PostTurnInput, logger: Logger): Facts {
  const proven: Facts = {};
  for (const call of input.toolCalls) {
    for (const rule of role.evidenceRules ?? []) {
      try {
        Object.assign(proven, rule(call));
      } catch (error) {
        logger.error('evidence-rule-failed', { roleId: role.id, toolName: call.toolName, error });
      }
    }
  }
  return proven;
}

export async function runPostTurn(
  dependencies: PostTurnDependencies,
  role: RoleDefinition,
  channel: ChannelDefinition,
  input: PostTurnInput,
  delivered: boolean,
): Promise<void> {
  const { facts, logger, metrics } = dependencies;
  let current: VersionedFacts = { version: input.factsVersion, facts: input.facts };
  const remember = async (learned: Facts, source: string) => {
    if (Object.keys(learned).length === 0) return;
    try {
      current = await facts.remember(input.conversationId, role.id, learned, current);
    } catch (error) {
      metrics.increment('post_turn_errors_total', { source });
      logger.error('post-turn-remember-failed', { roleId: role.id, source, error });
    }
  };

  await remember(evidence(role, input, logger), 'evidence');

  const hookInput = {
    facts: current.facts,
    offeredTools: input.offeredTools,
    capabilityTool: capabilityResolver(channel, role.id),
    toolCalls: input.toolCalls,
    replyText: input.replyText,
  };
  if (delivered && role.hooks?.afterTurn) {
    let derived: Facts | undefined;
    try {
      derived = role.hooks.afterTurn(hookInput);
    } catch (error) {
      metrics.increment('post_turn_errors_total', { source: 'after_turn' });
      logger.error('after-turn-failed', { roleId: role.id, error });
    }
    if (derived) await remember(derived, 'after_turn');
  }
  try {
    const kpi = role.hooks?.kpi?.({ ...hookInput, facts: current.facts, roleId: role.id, degraded: input.degraded });
    logger.info('turn-kpi', { roleId: role.id, channel: input.channelId, delivered, degraded: input.degraded, ...kpi });
  } catch (error) {
    logger.error('kpi-failed', { roleId: role.id, error });
  }
}
