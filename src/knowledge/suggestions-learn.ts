/**
 * Learning from a takeover's end: the suggestion is recorded (`drafting`) and drafted in the
 * background (personal data out, one FAST-tier call: `suggestions-draft.ts`), its model call
 * metered as a turn's is; the outcome is `pending`, `nothing` or `failed`. Closing stops the
 * drafts under way and waits for them.
 */
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ModelProvider } from '../model/provider.js';
import { draftSuggestion, exchangeText, type DraftCall, type TeamExchange } from './suggestions-draft.js';
import { suggestionIdOf, type SuggestionRecords } from './suggestions-records.js';

/** The role a suggestion draft's model use is metered under (`/admin/usage`, the reports' model use). */
const DRAFT_ROLE = 'faq-suggestion';

/** Meters model calls as a turn's are (`UsageRecorder`). */
export type DraftUsageRecorder = (turn: { roleId: string; channelId: string; calls: readonly DraftCall[] }) => Promise<void>;

export function createLearner(dependencies: {
  records: SuggestionRecords;
  models: (() => ModelProvider) | undefined;
  usage?: DraftUsageRecorder | undefined;
  logger: Logger;
  metrics: Metrics;
}) {
  const { records, logger, metrics } = dependencies;
  const inFlight = new Set<Promise<void>>();
  const closing = new AbortController();
  let models: ModelProvider | undefined;

  /** The draft's model calls, metered as a turn's are; a failure is logged, never the suggestion's. */
  const meter = async (exchange: TeamExchange, calls: readonly DraftCall[]) => {
    if (calls.length === 0 || !dependencies.usage) return;
    await dependencies
      .usage({ roleId: DRAFT_ROLE, channelId: exchange.channel, calls })
      .catch((error: unknown) => logger.warn('knowledge-suggestion-usage-failed', { handoffId: exchange.handoffId, error }));
  };

  const learn = async (exchange: TeamExchange) => {
    const id = suggestionIdOf(exchange.handoffId);
    const now = new Date();
    const created = await records.create({
      _id: id,
      handoffId: exchange.handoffId,
      channel: exchange.channel,
      status: 'drafting',
      exchange: exchangeText(exchange),
      createdAt: now,
      updatedAt: now,
    });
    if (!created) return; // this hand-off's suggestion exists (a retried end entry)
    const calls: DraftCall[] = [];
    try {
      if (!dependencies.models) throw new Error('no model providers');
      models ??= dependencies.models();
      const draft = await draftSuggestion(models, exchange, logger, closing.signal, (call) => calls.push(call));
      await meter(exchange, calls);
      await records.update(id, draft ? { status: 'pending', ...draft } : { status: 'nothing' });
      metrics.increment('knowledge_suggestions_total', { outcome: draft ? 'drafted' : 'nothing' });
      logger.info('knowledge-suggestion-drafted', { id, handoffId: exchange.handoffId, reusable: draft !== undefined });
    } catch (error) {
      await records.update(id, { status: 'failed', error: errorText(error) });
      metrics.increment('knowledge_suggestions_total', { outcome: 'failed' });
      logger.warn('knowledge-suggestion-failed', { id, handoffId: exchange.handoffId, error });
    }
  };

  return {
    /** The takeover's hook at a takeover's end: returns at once, the draft is made in the background. */
    fromTeam(exchange: TeamExchange): void {
      const running = learn(exchange)
        .catch((error: unknown) => logger.warn('knowledge-suggestion-failed', { handoffId: exchange.handoffId, error }))
        .finally(() => inFlight.delete(running));
      inFlight.add(running);
    },

    /** Stops the drafts under way (each recorded `failed`: an owner may still approve it with their own text) and waits for them. */
    async close(): Promise<void> {
      closing.abort(new Error('the service is shutting down'));
      await Promise.all(inFlight);
    },
  };
}
