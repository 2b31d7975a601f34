/**
 * Per-turn metering: every model call a turn makes (the judge's and the reply's) reports its
 * tier, model, time and token usage here. The turn's meter observes the latency histogram and
 * the token counters as calls finish, and keeps the list the turn result carries, which the
 * orchestrator hands to a usage recorder once the turn is over.
 */
import type { LanguageModelUsage } from 'ai';
import type { Metrics } from '../metrics.js';
import type { KnowledgeMissNote, ModelCallPurpose, ModelCallUsage } from '../contracts/index.js';
import type { ModelChain } from '../model/provider.js';

interface ModelCallReport {
  purpose: ModelCallPurpose;
  tier: ModelChain;
  /** The entry's label (`ModelEntry.label`): the model that answered, or failed. */
  model: string;
  seconds: number;
  /** Undefined when the call failed, or was aborted before the provider reported its tokens. */
  usage: LanguageModelUsage | undefined;
  /** The call was aborted (its turn cut short or started over). */
  aborted?: boolean;
  /** Requests made of the model (steps: a tool call and its follow-up are two); absent: one. */
  requests?: number | undefined;
}

export type ModelCallObserver = (report: ModelCallReport) => void;

/** Runs one model call and tells `observer` how long it took and, when it succeeded, its usage. */
export async function metered<T extends { usage: LanguageModelUsage; requests?: number }>(
  observer: ModelCallObserver | undefined,
  { signal, ...call }: { purpose: ModelCallPurpose; tier: ModelChain; model: string; signal?: AbortSignal },
  run: () => PromiseLike<T>,
): Promise<T> {
  const started = performance.now();
  const report = (usage: LanguageModelUsage | undefined, aborted = false, requests?: number) =>
    observer?.({ ...call, seconds: (performance.now() - started) / 1000, usage, ...(aborted ? { aborted } : {}), ...(requests ? { requests } : {}) });
  let result: T;
  try {
    result = await run();
  } catch (error) {
    report(undefined, signal?.aborted === true);
    throw error;
  }
  report(result.usage, false, result.requests);
  return result;
}

/**
 * Stores one finished turn's calls (the composition root binds it to the usage store), and its
 * knowledge miss (`miss`, with its ISO time): listed and counted with them, no command of its own.
 */
export type UsageRecorder = (turn: { roleId: string; channelId: string; calls: readonly ModelCallUsage[]; miss?: TurnMiss }) => Promise<void>;

/** A turn's knowledge miss as its usage entry carries it: the question without its message's key, and when. */
export type TurnMiss = Omit<KnowledgeMissNote, 'messageKey'> & { at: string };

export interface TurnMeter {
  readonly calls: ModelCallUsage[];
  observe: ModelCallObserver;
}

export function createTurnMeter(metrics: Metrics): TurnMeter {
  const calls: ModelCallUsage[] = [];
  return {
    calls,
    observe({ purpose, tier, model, seconds, usage, aborted, requests }) {
      metrics.observe('model_call_duration_seconds', { tier, purpose, outcome: usage ? 'ok' : aborted ? 'aborted' : 'failed' }, seconds);
      // An aborted call's tokens are not reported by the provider: counted as a call, never guessed.
      if (aborted) metrics.increment('model_calls_aborted_total', { tier, purpose });
      if (!usage) return;
      const call = {
        purpose,
        tier,
        model,
        inputTokens: usage.inputTokens ?? 0,
        outputTokens: usage.outputTokens ?? 0,
        ...(requests !== undefined && requests > 1 ? { requests } : {}),
      };
      calls.push(call);
      metrics.increment('model_tokens_total', { tier, model: call.model, kind: 'input' }, call.inputTokens);
      metrics.increment('model_tokens_total', { tier, model: call.model, kind: 'output' }, call.outputTokens);
    },
  };
}
