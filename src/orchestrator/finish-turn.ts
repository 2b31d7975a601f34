/**
 * After the reply: the turn's model usage metered (also for a turn cut short, which paid for the
 * calls it finished) with its knowledge miss in the same entry, and the routed role's post-turn work.
 * None throws: failures are logged.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, KnowledgeMissNote, RoleDefinition, TurnResult } from '../contracts/index.js';
import type { TurnMiss, UsageRecorder } from './metering.js';
import { runPostTurn } from './post-turn.js';
import type { FactStore } from './state/fact-store.js';
import type { TurnKnowledge } from './prepare-turn.js';

export interface FinishDependencies {
  byId: ReadonlyMap<string, RoleDefinition>;
  facts: FactStore;
  logger: Logger;
  metrics: Metrics;
  usage?: UsageRecorder | undefined;
  /** Where a turn's knowledge miss is listed and counted when no usage store carries it (`usage` absent). */
  knowledge?: Pick<TurnKnowledge, 'recordMiss'> | undefined;
}

/** Stores a turn's model usage (per day, role and channel); a failure is counted and logged. */
export async function recordUsage({ usage, metrics, logger }: FinishDependencies, turn: Parameters<UsageRecorder>[0]): Promise<void> {
  await usage?.(turn).catch((error: unknown) => {
    metrics.increment('usage_record_failed_total');
    logger.error('usage-record-failed', { roleId: turn.roleId, error });
  });
}

/** A miss as the turn's usage entry carries it: when, without its message's key. */
const turnMiss = ({ messageKey: _key, ...note }: KnowledgeMissNote): TurnMiss => ({ ...note, at: new Date().toISOString() });

/** Post-turn work for a leg whose reply was (or failed to be) delivered. Never throws. */
export async function finishTurn(
  dependencies: FinishDependencies,
  channel: ChannelDefinition,
  result: Pick<TurnResult, 'roleId' | 'usage' | 'postTurn' | 'knowledgeMiss'>,
  delivered: boolean,
): Promise<void> {
  const { logger, metrics } = dependencies;
  // Metering happens after the reply, outside the orchestrator's state: it costs the turn nothing.
  // A miss rides in the same entry (the usage fold lists it and the reports count it): once per
  // reply, as the metering. With no usage store, the knowledge lists it at once (neither throws).
  const miss = result.knowledgeMiss ? { miss: turnMiss(result.knowledgeMiss) } : {};
  if ((result.usage?.length || result.knowledgeMiss) && dependencies.usage) {
    await recordUsage(dependencies, { roleId: result.roleId, channelId: channel.id, calls: result.usage ?? [], ...miss });
  } else if (result.knowledgeMiss) await dependencies.knowledge?.recordMiss(result.knowledgeMiss);
  const role = dependencies.byId.get(result.roleId);
  if (!role || !result.postTurn) return;
  try {
    await runPostTurn({ facts: dependencies.facts, logger, metrics }, role, channel, result.postTurn, delivered);
  } catch (error) {
    logger.error('post-turn-failed', { roleId: role.id, error });
  }
}
