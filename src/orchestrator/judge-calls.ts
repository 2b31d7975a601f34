/**
 * The judge's model calls: one structured call along the fast tier's failover list, the cheaper
 * route-and-scope call used when the merged judgment fails or is skipped, a degraded turn's fact
 * extraction for the routed role, and the log line of a failure (debug while a provider is out).
 */
import { generateText, type ModelMessage } from 'ai';
import { z } from 'zod';
import { MODEL_TELEMETRY } from '../model/provider.js';
import type { Facts, RoleDefinition } from '../contracts/index.js';
import { ModelsUnavailableError, withFailover } from './failover.js';
import { clip, transcript } from './judge-prompt.js';
import { cachedOutput, factKey, factSchema, learnedFor, roleFacts, roleIds, type StructuredOutput } from './judge-schema.js';
import { JUDGE_LIMITS, type JudgeDependencies, type JudgeInput } from './judge-types.js';

/**
 * A judgment's failure: a warn line, or a debug one when every model was out (each provider's
 * outage line said why) or, for a skipped judgment, while a provider is out.
 */
export function logWhileOut(dependencies: JudgeDependencies, event: string, fields: { error?: unknown; breaker: unknown } | { error: unknown }): void {
  const outage = 'error' in fields ? fields.error instanceof ModelsUnavailableError : dependencies.outages?.active() === true;
  if (outage) dependencies.logger.debug(event, fields);
  else dependencies.logger.warn(event, fields);
}

export async function structured<T>(
  dependencies: JudgeDependencies,
  output: StructuredOutput<T>,
  system: string,
  prompt: string,
  signal: AbortSignal,
): Promise<T> {
  const result = await withFailover(
    {
      chain: 'fast',
      entries: dependencies.models.entries('fast'),
      breakers: dependencies.breakers,
      outages: dependencies.outages,
      timeoutMs: dependencies.timeoutMs,
      signal,
      purpose: 'judge',
      observer: dependencies.onModelCall,
      logger: dependencies.logger,
      metrics: dependencies.metrics,
    },
    async ({ entry, signal: abortSignal }) => {
      const answer = await generateText({
        model: entry.model,
        system,
        prompt,
        output,
        maxOutputTokens: 800,
        maxRetries: 0,
        abortSignal,
        telemetry: MODEL_TELEMETRY,
      });
      // Read within the attempt: output that does not parse moves the call to the next entry.
      if (answer.output === undefined) throw new Error('the model returned no structured output');
      return { usage: answer.usage, output: answer.output };
    },
  );
  return result.output;
}

/** Route and scope only: the cheaper call used when the merged judgment fails or is skipped. */
export async function routeFallback(dependencies: JudgeDependencies, input: JudgeInput) {
  const roles = input.roles;
  const output = cachedOutput(roles, 'route', () => z.object({ route: z.enum(roleIds(roles)), inScope: z.boolean() }));
  const system = [
    "Pick which role answers the latest customer message of a business's conversation, and whether it is about the business at all.",
    ...roles.map((role) => `- ${role.id}: ${clip(role.description, JUDGE_LIMITS.descriptionChars)}`),
  ].join('\n');
  return structured(dependencies, output, system, `Conversation (latest last):\n${transcript(input.history)}`, input.signal);
}

/** A degraded turn's one extra call: the routed role's facts alone. */
export async function extractFacts(
  dependencies: JudgeDependencies,
  role: RoleDefinition,
  history: readonly ModelMessage[],
  signal: AbortSignal,
): Promise<Facts> {
  const questions = roleFacts(role);
  const output = cachedOutput(role, 'facts', () => z.object(Object.fromEntries(questions.map(([key, question]) => [key, factSchema(question)]))));
  const system = [
    'Answer each question from the conversation; null when it does not say. Never guess.',
    ...questions.map(([key, question]) => `- ${key}: ${clip(question.question, JUDGE_LIMITS.questionChars)}`),
  ].join('\n');
  const answers = await structured(dependencies, output, system, `Conversation (latest last):\n${transcript(history)}`, signal);
  return learnedFor(role.id, Object.fromEntries(Object.entries(answers).map(([key, value]) => [factKey(role.id, key), value])));
}
