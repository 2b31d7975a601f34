/**
 * The vision safety-net: a reply model that takes no files gets, for each customer message of
 * the turn holding photos (or PDFs), one MODEL_VISION call's description of them as labelled
 * text instead of the files. Made at most once per turn (the caller memoizes it), only when a
 * text-only entry is about to be called. A vision list that is down as a whole fails the turn
 * (retried like any outage); a refusal for good, or no model that can see, leaves a note saying
 * the attachment could not be viewed.
 */
import { generateText, type FilePart, type ModelMessage, type TextPart } from 'ai';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import { MODEL_TELEMETRY, type ModelProvider } from '../model/provider.js';
import { ModelsUnavailableError, withFailover } from './failover.js';
import type { ModelCallObserver } from './metering.js';
import type { ModelOutages } from './model-outages.js';

export interface VisionDependencies {
  models: ModelProvider;
  breakers: ProviderBreakers | undefined;
  outages?: ModelOutages | undefined;
  timeoutMs: number;
  logger: Logger;
  metrics: Metrics;
}

const DESCRIBE_PROMPT =
  'Describe what the attached file(s) show, for an assistant who cannot see them and must answer the customer about them: ' +
  'every visible text, number, product, document type and problem, plainly and factually. Do not answer the customer.';

const UNVIEWABLE = '[Attachment: it could not be viewed here. If it matters, ask the customer what it shows.]';

const fileParts = (message: ModelMessage): FilePart[] =>
  message.role === 'user' && Array.isArray(message.content) ? message.content.filter((part): part is FilePart => part.type === 'file') : [];

async function describe(dependencies: VisionDependencies, files: FilePart[], signal: AbortSignal, observer: ModelCallObserver | undefined): Promise<string> {
  const entries = dependencies.models.entries('vision');
  if (entries.length === 0) return UNVIEWABLE;
  try {
    const result = await withFailover(
      {
        chain: 'vision',
        entries,
        breakers: dependencies.breakers,
        outages: dependencies.outages,
        timeoutMs: dependencies.timeoutMs,
        signal,
        purpose: 'vision',
        observer,
        logger: dependencies.logger,
        metrics: dependencies.metrics,
      },
      async ({ entry, signal: abortSignal, last }) => {
        const answer = await generateText({
          model: entry.model,
          messages: [{ role: 'user', content: [{ type: 'text', text: DESCRIBE_PROMPT }, ...files] }],
          maxOutputTokens: 600,
          maxRetries: last ? 1 : 0,
          abortSignal,
          telemetry: MODEL_TELEMETRY,
        });
        if (!answer.text.trim()) throw new Error('the vision model described nothing');
        return { text: answer.text.trim(), usage: answer.usage };
      },
    );
    dependencies.metrics.increment('vision_descriptions_total', { outcome: 'ok' });
    return `[Attachment described by an assistant that can see it: ${result.text}]`;
  } catch (error) {
    if (signal.aborted || error instanceof ModelsUnavailableError) throw error;
    dependencies.metrics.increment('vision_descriptions_total', { outcome: 'failed' });
    dependencies.logger.warn('vision-description-failed', { error });
    return UNVIEWABLE;
  }
}

/** True when a message of the history carries a file part (a photo or PDF of this turn). */
export function holdsFiles(messages: readonly ModelMessage[]): boolean {
  return messages.some((message) => fileParts(message).length > 0);
}

/** The history with each message's files replaced by their description (one vision call per such message). */
export async function describedHistory(
  dependencies: VisionDependencies,
  messages: readonly ModelMessage[],
  signal: AbortSignal,
  observer: ModelCallObserver | undefined,
): Promise<ModelMessage[]> {
  const result: ModelMessage[] = [];
  for (const message of messages) {
    const files = fileParts(message);
    if (message.role !== 'user' || files.length === 0 || !Array.isArray(message.content)) {
      result.push(message);
      continue;
    }
    const description = await describe(dependencies, files, signal, observer);
    const text = message.content.filter((part): part is TextPart => part.type === 'text');
    result.push({ role: 'user', content: [...text, { type: 'text', text: description }] });
  }
  return result;
}
