/**
 * What a recorded batch's reply is: the parts an earlier attempt stored (resumed, never answered
 * twice), the service's words for a reset with nothing after it, or a fresh orchestrator run.
 * A reset anywhere in a burst: the messages before it stay in the old conversation's history, the
 * ones after it are the new conversation's first (the last reset counts).
 */
import type { InboundMessage, TurnResult } from '../contracts/index.js';
import type { PreparedMedia } from '../media/inbound-media.js';
import type { TurnReads } from '../orchestrator/turn-reads.js';
import type { TurnGate } from '../queue/turn-worker.js';
import { partRecords, type MessageRecord, type RecentMessage, type TurnRecords } from '../store/transcript-store.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import type { InboundHandlerOptions } from './inbound-options.js';
import { recentOf, type RecordedBatch } from './record-batch.js';
import { runOrchestrator } from './run-orchestrator.js';

export interface ReplyPlan {
  /** Reply parts an earlier attempt stored for this batch: resumed as they stand (else none). */
  parts: MessageRecord[];
  /** The batch was a reset and nothing after it: the service's words answer it. */
  resetOnly: boolean;
  /** The messages the turn answers before its last (after a reset, only those after it). */
  earlier: InboundMessage[];
  /** The conversation's history with the batch in it (after a reset, only what followed it). */
  history: RecentMessage[];
  /** The prepared media of the messages in `history`'s batch, in order. */
  turnMedia: (PreparedMedia | undefined)[];
  /** The turn's first reads, started while the conversation was opened (none after a reset: they read the state it cleared). */
  reads?: TurnReads | undefined;
}

/** The recent history with the additions it does not hold yet, appended. */
export function withMessages(recent: readonly RecentMessage[], additions: readonly RecentMessage[]): RecentMessage[] {
  const known = new Set(recent.map((message) => message.id));
  return [...recent, ...additions.filter((message) => !known.has(message.id))];
}

/** Decides how the batch is answered: resumed, reset, or run (a reset clears the orchestrator's state here). */
export async function planReply(
  options: Pick<InboundHandlerOptions, 'transcripts' | 'orchestrator' | 'metrics'>,
  recorded: RecordedBatch,
  reads?: TurnReads,
): Promise<ReplyPlan> {
  const { channel, logger, conversationId, recent, message, preparedMedia } = recorded;
  let { earlier } = recorded;
  const resetAt = [...earlier, message].findLastIndex((received) => channel.isResetCommand?.(received.text) === true);
  let turnMedia = preparedMedia;
  const inbound = recentOf(channel.id, message);
  // A burst reaches the model as consecutive customer messages, the last one the turn's own.
  const burst = earlier.map((received) => recentOf(channel.id, received));

  // Only an attempt that got as far as saving history can have stored reply parts worth
  // resuming; otherwise a stored reply (if any) still wins in saveReplyParts.
  const answeredBefore = recent.some((entry) => entry.id === inbound.id);
  const parts = answeredBefore ? await options.transcripts.replyParts(channel.id, message.messageId) : [];
  let history = withMessages(recent, [...burst, inbound]);
  let resetOnly = false;
  if (parts.length === 0 && resetAt >= 0) {
    await options.orchestrator.resetConversation(conversationId);
    options.metrics.increment('conversation_resets_total', { channel: channel.id });
    const fresh = [...earlier, message].slice(resetAt + 1);
    logger.info('conversation-reset', { messagesAfter: fresh.length });
    history = fresh.map((received) => recentOf(channel.id, received));
    turnMedia = preparedMedia.slice(resetAt + 1);
    resetOnly = fresh.length === 0;
    if (!resetOnly) earlier = fresh.slice(0, -1);
  }
  return { parts, resetOnly, earlier, history, turnMedia, ...(resetAt < 0 ? { reads } : {}) };
}

/** The reply's parts, stored (or found stored), and the turn that produced them when this attempt ran one. */
export async function storeReply(
  options: Pick<InboundHandlerOptions, 'transcripts' | 'orchestrator' | 'metrics'>,
  recorded: RecordedBatch,
  plan: ReplyPlan,
  signal: AbortSignal,
  records: TurnRecords,
  gate: TurnGate | undefined,
): Promise<{ parts: MessageRecord[]; result?: TurnResult }> {
  const { channel, logger, conversationId, message } = recorded;
  if (plan.parts.length > 0) {
    // What the earlier attempt stored and sent may never have reached the outbox.
    records.add(plan.parts.flatMap(partRecords));
    logger.info('reply-resumed', { parts: plan.parts.length });
    return { parts: plan.parts };
  }
  if (plan.resetOnly) {
    await gate?.commit();
    const parts = await options.transcripts.saveReplyParts(
      {
        conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        roleId: 'system',
        parts: [serviceWords(languageOf(message.metadata.language)).reset],
        claimFirst: true,
      },
      records,
    );
    return { parts };
  }
  return runOrchestrator(options, recorded, plan, signal, records, gate);
}
