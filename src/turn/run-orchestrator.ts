/**
 * The turn's run of the orchestrator: the batch's words (a tap on its own, the other messages as
 * the inbound), its history for the model (bounded on a guarded turn), text streamed behind the
 * turn's gate; then the reply stored as parts, the first claimed for its send.
 */
import { randomUUID } from 'node:crypto';
import type { InboundMessage, TurnResult } from '../contracts/index.js';
import { withMediaContent, type PreparedMedia } from '../media/inbound-media.js';
import { toModelHistory } from '../orchestrator/history.js';
import type { TurnReads } from '../orchestrator/turn-reads.js';
import type { TurnGate } from '../queue/turn-worker.js';
import { inboundMessageId, type MessageRecord, type RecentMessage, type TurnRecords } from '../store/transcript-store.js';
import type { InboundHandlerOptions } from './inbound-options.js';
import type { RecordedBatch } from './record-batch.js';
import { storedTurn } from './stored-turn.js';

/** A guarded turn's history: the last few messages, each cut short. */
const GUARDED_HISTORY_MESSAGES = 6;
const GUARDED_MESSAGE_CHARS = 2000;

function boundedHistory(history: readonly RecentMessage[]): RecentMessage[] {
  return history
    .slice(-GUARDED_HISTORY_MESSAGES)
    .map((entry) => (entry.text.length > GUARDED_MESSAGE_CHARS ? { ...entry, text: entry.text.slice(0, GUARDED_MESSAGE_CHARS) } : entry));
}

/**
 * What a batch says to its turn: the last tap on an answer button on its own (`tap`), and the
 * other messages' words as the turn's inbound (the last message's id, no `choice`).
 */
function turnWords(batch: readonly InboundMessage[]): {
  inbound: InboundMessage;
  tap?: { text: string; choice: string; messageId: string; receivedAt: number };
} {
  const last = batch.at(-1);
  if (!last) throw new Error('an empty batch has no turn');
  const tapAt = batch.findLastIndex((received) => received.metadata.choice !== undefined);
  const tapped = batch[tapAt];
  if (!tapped?.metadata.choice) return { inbound: batch.length > 1 ? { ...last, text: batch.map((received) => received.text).join('\n') } : last };
  const others = batch.filter((_, index) => index !== tapAt);
  const metadata = Object.fromEntries(Object.entries(last.metadata).filter(([name]) => name !== 'choice'));
  return {
    inbound: { ...last, text: others.map((received) => received.text).join('\n'), metadata },
    tap: { text: tapped.text, choice: tapped.metadata.choice, messageId: tapped.messageId, receivedAt: tapped.receivedAt },
  };
}

/**
 * A streaming turn's deltas behind its gate: the first waits for the gate to commit (held while
 * the customer types), those after it follow at once; a turn started over meanwhile streams nothing.
 */
function gatedStream(gate: TurnGate | undefined, send: ((delta: string) => void) | undefined) {
  if (!send) return undefined;
  if (!gate) return { delta: send, released: async () => undefined };
  let open = false;
  let held: string[] = [];
  let committing: Promise<void> | undefined;
  return {
    delta(delta: string) {
      if (open) return send(delta);
      held.push(delta);
      committing ??= gate.commit().then(
        () => {
          open = true;
          for (const text of held) send(text);
          held = [];
        },
        () => void (held = []),
      );
    },
    released: async () => committing,
  };
}

/** Runs the orchestrator on the batch and stores its reply (a model outage throws, for the queue's retry). */
export async function runOrchestrator(
  options: Pick<InboundHandlerOptions, 'transcripts' | 'orchestrator' | 'metrics'>,
  { channel, logger, conversationId, created, guarded, message }: RecordedBatch,
  /** What the turn answers (see `ReplyPlan`). */
  {
    earlier,
    history,
    turnMedia,
    reads,
  }: {
    earlier: readonly InboundMessage[];
    history: readonly RecentMessage[];
    turnMedia: readonly (PreparedMedia | undefined)[];
    reads?: TurnReads | undefined;
  },
  signal: AbortSignal,
  records: TurnRecords,
  gate: TurnGate | undefined,
): Promise<{ parts: MessageRecord[]; result: TurnResult }> {
  // Once the turn first waits (on Redis, or the model): the indicator's request is no part of the turn's own path.
  setImmediate(() => void channel.transport.showTyping?.(message));
  // Started over: only the model call, and what it would stream, is cut short by a
  // message arriving before anything of the turn left; text streams once the gate commits.
  if (gate?.restart.aborted) throw gate.restart.reason;
  const stream = gatedStream(gate, channel.transport.streamDelta ? (delta: string) => channel.transport.streamDelta?.(message, delta) : undefined);
  const modelHistory = (entries: readonly RecentMessage[], prepared: readonly (PreparedMedia | undefined)[]) =>
    withMediaContent(toModelHistory(guarded ? boundedHistory(entries) : entries), prepared);
  const batchNow = [...earlier, message];
  const { inbound: wordsInbound, tap } = turnWords(batchNow);
  const tapAt = tap ? batchNow.findIndex((received) => received.messageId === tap.messageId) : -1;
  const tapId = tap ? inboundMessageId(channel.id, tap.messageId) : undefined;
  const words = {
    inbound: wordsInbound,
    ...(tap
      ? {
          tap: {
            text: tap.text,
            choice: tap.choice,
            receivedAt: tap.receivedAt,
            history: modelHistory(
              history.filter((entry) => entry.id !== tapId),
              turnMedia.filter((_, index) => index !== tapAt),
            ),
          },
        }
      : {}),
  };
  // A model outage fails the turn for the queue's retry (the worker decides on the holding message).
  const result = await options.orchestrator.runTurn(
    channel,
    {
      conversationId,
      firstTurn: created,
      runId: randomUUID(),
      // Tools reading the customer's latest words (a hand-off's summary, an answer to a pending question) get the whole
      // burst; a tap on an answer button is decided on its own, wherever it sits in it.
      ...words,
      // A guarded turn's model reads a bounded history (the stored one stays whole).
      history: modelHistory(history, turnMedia),
      signal: gate ? AbortSignal.any([signal, gate.restart]) : signal,
      logger,
      ...(stream ? { onTextDelta: stream.delta } : {}),
      ...(gate ? { beforeAction: () => gate.commit() } : {}),
    },
    reads,
  );
  await stream?.released();
  await channel.transport.flushDeltas?.(message);
  // Held while the batch may still grow (or the customer types); a restart meanwhile throws.
  await gate?.commit();
  // A turn cut short by a lost lock or a shutdown is retried by the queue, not answered.
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('turn aborted');
  options.metrics.increment('turns_total', { channel: channel.id, outcome: result.failed ? 'apology' : 'answered' });
  const parts = await options.transcripts.saveReplyParts(
    {
      conversationId,
      channel: channel.id,
      replyTo: message.messageId,
      roleId: result.roleId,
      parts: channel.splitReply(result.text),
      turn: storedTurn(result),
      ...(result.guidance ? { guidance: result.guidance } : {}),
      // The question's answers to tap, kept with the parts: a retry resuming them sends the same question.
      ...(result.choices?.length
        ? {
            question: {
              choices: result.choices,
              ...(result.choicesExpireAt !== undefined ? { choicesExpireAt: result.choicesExpireAt } : {}),
              ...(result.choicesLanguage !== undefined ? { choicesLanguage: result.choicesLanguage } : {}),
            },
          }
        : {}),
      claimFirst: true,
    },
    records,
  );
  return { parts, result };
}
