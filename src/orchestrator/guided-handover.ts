/**
 * An escalation entry of the business's guidance that the judge found applying hands the
 * conversation to its team through the channel's own hand-off tool (the same record, notices and
 * team hours as the model's call), run by the service once the turn may act (`beforeAction`),
 * not left to the model. The reply is then told what happened; where the tool needs something
 * first (the web asks for an email or phone), the reply is told to ask for it and hand over.
 */
import { z } from 'zod';
import type { ChannelDefinition, TurnInput } from '../contracts/index.js';
import type { ToolCallContext } from '../contracts/tool.js';
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { PreparedLeg } from './prepare-turn.js';

const OutcomeSchema = z.looseObject({ status: z.string(), nextSteps: z.string().optional() });

/** The note the reply's prompt gets (undefined: nothing to hand over). */
export async function guidedHandOver(
  channel: ChannelDefinition,
  input: Pick<TurnInput, 'beforeAction'>,
  leg: PreparedLeg,
  context: ToolCallContext,
  observe: { logger: Logger; metrics: Metrics },
): Promise<string | undefined> {
  const handOver = leg.guidance?.handOver;
  if (!handOver) return undefined;
  const tool = channel.tools.find((candidate) => candidate.name === handOver.tool);
  if (!tool) {
    observe.logger.warn('guidance-handover-unavailable', { entry: handOver.entry, team: handOver.team, channel: channel.id });
    return undefined;
  }
  await input.beforeAction?.();
  try {
    const outcome = OutcomeSchema.parse(await tool.execute({ reason: handOver.reason }, context));
    observe.metrics.increment('guidance_handovers_total', { team: handOver.team, outcome: outcome.status });
    observe.logger.info('guidance-handed-over', { entry: handOver.entry, team: handOver.team, status: outcome.status });
    return `As the business's guidance asks, the service has handed this conversation to the ${handOver.team} team (${outcome.status}). ${outcome.nextSteps ?? ''} Tell the customer so in their language; do not call a hand-off tool again.`;
  } catch (error) {
    observe.metrics.increment('guidance_handovers_total', { team: handOver.team, outcome: 'needs_contact' });
    return `The business's guidance asks that this conversation go to the ${handOver.team} team. ${errorText(error)} Then hand over with ${tool.name}.`;
  }
}
