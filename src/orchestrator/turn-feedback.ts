/**
 * A comment the customer may be writing on the service: after they rated it (the satisfaction
 * question, src/csat/), their next message is a comment only when it reads as one. The judge's one
 * call decides (`feedbackOnly`, asked only while a comment is awaited): a comment is stored and
 * answered in the service's words with no reply model call; a request, a question or a new topic
 * is answered as any turn, and the comment stops waiting.
 */
import type { TurnInput, TurnResult } from '../contracts/index.js';
import type { PreparedLeg } from './prepare-turn.js';

export interface TurnFeedback {
  /** Whether the conversation's customer was just invited to comment on the service. */
  awaiting(conversationId: string): Promise<boolean>;
  /** The latest message is only a comment: stored; returns the service's words thanking the customer. */
  comment(input: { conversationId: string; channel: string; text: string }): Promise<string>;
  /** The latest message asks or says something else: the comment stops waiting (the turn answers it). */
  moveOn(conversationId: string): Promise<void>;
}

/** The turn's result when the judge read its message as a comment (the comment taken once the turn may act), else undefined. */
export async function answerFeedback(
  feedback: TurnFeedback,
  input: TurnInput,
  channelId: string,
  leg: PreparedLeg,
  runId: string,
): Promise<TurnResult | undefined> {
  if (!leg.feedbackOnly) {
    await feedback.moveOn(input.conversationId);
    return undefined;
  }
  // Nothing that must not happen twice before the turn may no longer start over.
  await input.beforeAction?.();
  const text = await feedback.comment({ conversationId: input.conversationId, channel: channelId, text: input.inbound.text });
  return { runId, roleId: leg.role.id, text, failed: false, offeredTools: [], toolCalls: [], modelCalls: leg.modelCalls };
}
