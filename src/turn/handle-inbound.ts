/**
 * Answers one inbound message, whatever its channel: record it, run the orchestrator (unless
 * an earlier attempt already stored the reply), then send each reply part exactly once
 * through the send ledger. A retry after a crash resumes from what was stored, so the customer
 * never gets a second, different answer.
 */
import { randomUUID } from 'node:crypto';
import { isRetryable } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, InboundMessage, TurnResult } from '../orchestrator/contracts.js';
import { toModelHistory } from '../orchestrator/history.js';
import type { Orchestrator } from '../orchestrator/run-turn.js';
import type { InboundHandler } from '../queue/turn-worker.js';
import { inboundMessageId, type MessageRecord, type RecentMessage, type TranscriptStore } from '../store/transcript-store.js';

export interface InboundHandlerOptions {
  channels: ReadonlyMap<string, ChannelDefinition>;
  orchestrator: Orchestrator;
  transcripts: TranscriptStore;
  logger: Logger;
  metrics: Metrics;
  /** Observes each answered turn (the CLI shows its decision). */
  onTurn?: (result: TurnResult) => void;
}

const RESET_REPLY = 'Done — we are starting a new conversation. How can I help?';

function withMessages(recent: readonly RecentMessage[], additions: readonly RecentMessage[]): RecentMessage[] {
  const known = new Set(recent.map((message) => message.id));
  return [...recent, ...additions.filter((message) => !known.has(message.id))];
}

export function createInboundHandler(options: InboundHandlerOptions): InboundHandler {
  const { transcripts, metrics } = options;

  /** Sends each pending part once; true when every part went out. */
  const deliver = async (channel: ChannelDefinition, message: InboundMessage, parts: MessageRecord[], logger: Logger) => {
    let allSent = true;
    for (const part of parts) {
      if (part.status === 'sending') {
        // An earlier attempt died between claiming and recording this send: it may have gone
        // out. Sending again could duplicate it, so it is marked and counted instead.
        await transcripts.markPartFailed(part._id, 'uncertain', undefined, 'send outcome unknown after a worker crash');
        metrics.increment('reply_part_uncertain_total', { channel: channel.id });
        logger.warn('reply-part-uncertain', { part: part.part });
        allSent = false;
        continue;
      }
      if (part.status !== 'pending' || !(await transcripts.claimPart(part._id))) continue;
      try {
        const sent = await channel.transport.send(message, part.text, part.part ?? 0);
        await transcripts.markPartSent(part._id, sent.channelMessageId, sent.status);
        metrics.increment('reply_parts_sent_total', { channel: channel.id });
        logger.info('reply-sent', { part: part.part, of: parts.length, channelMessageId: sent.channelMessageId });
      } catch (error) {
        if (isRetryable(error)) {
          await transcripts.releasePart(part._id);
          logger.warn('reply-send-retrying', { part: part.part, error });
          throw error;
        }
        const code = (error as { code?: unknown }).code;
        await transcripts.markPartFailed(
          part._id,
          'failed',
          code === undefined ? undefined : String(code),
          error instanceof Error ? error.message : String(error),
        );
        metrics.increment('reply_send_failed_total', { channel: channel.id });
        logger.error('reply-send-failed', { part: part.part, error });
        allSent = false;
      }
    }
    return allSent;
  };

  return async (message, signal) => {
    const logger = options.logger.child({ conversationKey: message.conversationKey, messageId: message.messageId });
    const channel = options.channels.get(message.channel);
    if (!channel) {
      logger.error('inbound-unknown-channel', { channel: message.channel });
      metrics.increment('inbound_dropped_total', { reason: 'unknown_channel' });
      return;
    }
    const { conversationId, created, recent } = await transcripts.openConversation({
      key: message.conversationKey,
      channel: channel.id,
      address: message.from.address,
      ...(message.from.displayName ? { displayName: message.from.displayName } : {}),
    });
    await transcripts.recordInbound({
      conversationId,
      channel: channel.id,
      channelMessageId: message.messageId,
      text: message.text,
      receivedAt: new Date(message.receivedAt),
    });
    const inbound: RecentMessage = { id: inboundMessageId(channel.id, message.messageId), direction: 'inbound', text: message.text };

    // Only an attempt that got as far as saving history can have stored reply parts worth
    // resuming; otherwise a stored reply (if any) still wins in saveReplyParts.
    const answeredBefore = recent.some((entry) => entry.id === inbound.id);
    let parts = answeredBefore ? await transcripts.replyParts(channel.id, message.messageId) : [];
    let result: TurnResult | undefined;
    let history = withMessages(recent, [inbound]);
    if (parts.length > 0) {
      logger.info('reply-resumed', { parts: parts.length });
    } else if (channel.isResetCommand?.(message.text)) {
      await options.orchestrator.resetConversation(conversationId);
      history = [];
      metrics.increment('conversation_resets_total', { channel: channel.id });
      logger.info('conversation-reset');
      parts = await transcripts.saveReplyParts({
        conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        roleId: 'system',
        parts: [RESET_REPLY],
      });
    } else {
      void channel.transport.showTyping?.(message);
      result = await options.orchestrator.runTurn(channel, {
        conversationId,
        firstTurn: created,
        runId: randomUUID(),
        inbound: message,
        history: toModelHistory(history),
        signal,
        logger,
        ...(channel.transport.streamDelta
          ? { onTextDelta: (delta: string) => channel.transport.streamDelta?.(message, delta) }
          : {}),
      });
      await channel.transport.flushDeltas?.(message);
      // A turn cut short by a lost lock or a shutdown is retried by the queue, not answered.
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('turn aborted');
      metrics.increment('turns_total', { channel: channel.id, outcome: result.failed ? 'apology' : 'answered' });
      parts = await transcripts.saveReplyParts({
        conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        roleId: result.roleId,
        parts: channel.splitReply(result.text),
      });
    }
    const replies = parts.map((part): RecentMessage => ({ id: part._id, direction: 'outbound', text: part.text }));
    await transcripts.saveRecent(conversationId, withMessages(history, replies));
    const delivered = await deliver(channel, message, parts, logger);
    if (result) {
      await options.orchestrator.finishTurn(channel, result, delivered);
      options.onTurn?.(result);
    }
  };
}
