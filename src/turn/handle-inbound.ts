/**
 * Answers one inbound batch (a message, or a burst of them answered together), whatever its
 * channel: record each message, run the orchestrator once (unless
 * an earlier attempt already stored the reply, keyed to the batch's last message), then send
 * each reply part exactly once through the send ledger. A retry after a crash resumes from what was stored, so the customer
 * never gets a second, different answer; a part whose send outcome was lost (found `sending`)
 * is looked up at the provider and sent only if it is not there (or resent where the receiver
 * dedupes). When the worker gives up on a message, `createGiveUpHandler` makes it visible: the
 * customer gets one apology, the transcript records it failed, a metric and a log say so.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ChannelSendError, classifyFailure, errorText, isRetryable } from '../errors/index.js';
import { formatIssues } from '../errors/issues.js';
import { sendPartOnce } from '../store/part-ledger.js';
import type { Logger } from '../logger.js';
import { withMediaContent, type MediaIntake, type MediaTurn, type PreparedMedia } from '../media/inbound-media.js';
import type { Metrics } from '../metrics.js';
import type { TakeoverHook } from '../takeover/takeover-inbound.js';
import type { ChannelDefinition, InboundMessage, SendOptions, TurnResult } from '../contracts/index.js';
import { toModelHistory } from '../orchestrator/history.js';
import type { Orchestrator } from '../orchestrator/run-turn.js';
import type { GiveUpHandler, HoldingNotice, InboundBatch, InboundHandler, TurnGate } from '../queue/turn-worker.js';
import { createHoldingNotice, type HoldingNoticeOptions } from './holding-notice.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import {
  APOLOGY_PART,
  inboundMessageId,
  outboundMessageId,
  partRecords,
  type MessageRecord,
  type MessageStatus,
  type RecentMessage,
  type TranscriptStore,
  type TurnRecords,
} from '../store/transcript-store.js';

export interface InboundHandlerOptions {
  channels: ReadonlyMap<string, ChannelDefinition>;
  orchestrator: Orchestrator;
  transcripts: TranscriptStore;
  logger: Logger;
  metrics: Metrics;
  /** Fetches, stores and reads a message's media before its turn (photos, voice notes, PDFs). */
  media?: MediaIntake;
  /** Observes each answered turn (the CLI shows its decision). */
  onTurn?: (result: TurnResult) => void;
  /** Human takeover: handles teammate entries and a held conversation's messages (true: no turn). */
  takeover?: TakeoverHook;
}

/** What a guarded turn's model and transcript read in place of a message's attachments. */
const GUARDED_MEDIA_NOTE = '(The attachment of this message was left out: it could not be processed.)';
/** A guarded turn's history: the last few messages, each cut short. */
const GUARDED_HISTORY_MESSAGES = 6;
const GUARDED_MESSAGE_CHARS = 2000;

function boundedHistory(history: readonly RecentMessage[]): RecentMessage[] {
  return history
    .slice(-GUARDED_HISTORY_MESSAGES)
    .map((entry) => (entry.text.length > GUARDED_MESSAGE_CHARS ? { ...entry, text: entry.text.slice(0, GUARDED_MESSAGE_CHARS) } : entry));
}
/** The apology for a message given up on, in English (a web visitor's comes in their language). */
export const APOLOGY_TEXT = serviceWords('en').apology;

/** Ledger states of a part that left (or may have left) for the customer. */
const sentStatuses = new Set<MessageStatus>(['queued', 'sent', 'delivered', 'read']);
/** Ledger states of a part not (known to be) sent yet. */
const unsentStatuses = new Set<MessageStatus>(['pending', 'sending', 'uncertain']);

/**
 * What finishing a turn needs once its reply is out, stored with the reply's first part: the
 * attempt that delivers the reply (a retry resuming the stored parts never ran the turn) takes
 * it and runs post-turn and metering once.
 */
const StoredTurnSchema = z.object({
  roleId: z.string(),
  usage: z
    .array(
      z.object({
        purpose: z.enum(['judge', 'reply', 'vision']),
        tier: z.enum(['fast', 'smart', 'vision']),
        model: z.string(),
        inputTokens: z.number(),
        outputTokens: z.number(),
      }),
    )
    .optional(),
  postTurn: z
    .object({
      conversationId: z.string(),
      roleId: z.string(),
      facts: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      factsVersion: z.number(),
      degraded: z.boolean(),
      offeredTools: z.array(z.string()),
      toolCalls: z.array(z.object({ toolName: z.string(), input: z.unknown(), output: z.unknown(), isError: z.boolean() })),
      replyText: z.string(),
      channelId: z.string(),
    })
    .optional(),
});

function storedTurn(result: TurnResult): string {
  const { roleId, usage, postTurn } = result;
  return JSON.stringify({ roleId, ...(usage ? { usage } : {}), ...(postTurn ? { postTurn } : {}) });
}

function withMessages(recent: readonly RecentMessage[], additions: readonly RecentMessage[]): RecentMessage[] {
  const known = new Set(recent.map((message) => message.id));
  return [...recent, ...additions.filter((message) => !known.has(message.id))];
}

/**
 * What a batch says to its turn: the last tap on an answer button on its own (`tap`), and the
 * other messages' words as the turn's inbound (the last message's id, no `choice`).
 */
function turnWords(batch: readonly InboundMessage[]): { inbound: InboundMessage; tap?: { text: string; choice: string; messageId: string } } {
  const last = batch.at(-1);
  if (!last) throw new Error('an empty batch has no turn');
  const tapAt = batch.findLastIndex((received) => received.metadata.choice !== undefined);
  const tapped = batch[tapAt];
  if (!tapped?.metadata.choice) return { inbound: batch.length > 1 ? { ...last, text: batch.map((received) => received.text).join('\n') } : last };
  const others = batch.filter((_, index) => index !== tapAt);
  const metadata = Object.fromEntries(Object.entries(last.metadata).filter(([name]) => name !== 'choice'));
  return {
    inbound: { ...last, text: others.map((received) => received.text).join('\n'), metadata },
    tap: { text: tapped.text, choice: tapped.metadata.choice, messageId: tapped.messageId },
  };
}

/** Reply parts through the send ledger: claim, send, record — and resolve lost outcomes. */
function createLedgerSender(transcripts: TranscriptStore, metrics: Metrics) {
  const sendPart = (
    channel: ChannelDefinition,
    message: InboundMessage,
    part: MessageRecord,
    logger: Logger,
    assertHeld: (() => void) | undefined,
    records: TurnRecords | undefined,
    takeTurn: boolean,
    options?: SendOptions,
  ) => {
    return sendPartOnce(transcripts, {
      channel,
      inbound: message,
      part,
      records,
      takeTurn,
      send: async () => {
        // The fence: a worker that may have lost the conversation sends nothing (the part stays claimed and is looked up).
        assertHeld?.();
        const started = performance.now();
        try {
          const sent = await channel.transport.send(message, part.text, part.part ?? 0, ...(options ? [options] : []));
          metrics.observe('send_duration_seconds', { channel: channel.id, outcome: 'sent' }, (performance.now() - started) / 1000);
          return sent;
        } catch (error) {
          if (error instanceof ChannelSendError) {
            metrics.observe(
              'send_duration_seconds',
              { channel: channel.id, outcome: error.retryable ? 'retrying' : 'failed' },
              (performance.now() - started) / 1000,
            );
          }
          if (isRetryable(error)) logger.warn('reply-send-retrying', { part: part.part, error });
          else if (error instanceof ChannelSendError) {
            metrics.increment('reply_send_failed_total', { channel: channel.id });
            logger.error('reply-send-failed', { part: part.part, error });
          }
          throw error;
        }
      },
      onResolved: (outcome, found) => {
        metrics.increment('reply_parts_resolved_total', { channel: channel.id, outcome });
        logger.warn('reply-part-resolved', { part: part.part, outcome, ...(found ? { channelMessageId: found.channelMessageId } : {}) });
      },
    });
  };

  /**
   * Sends each part once, in order; throws at the first part that could not go out. Parts this
   * attempt stored carry their turn: marking the last one sent takes it in the same write, and
   * the result says whether it did (the caller then owns finishing the turn).
   */
  return async (
    channel: ChannelDefinition,
    message: InboundMessage,
    parts: readonly MessageRecord[],
    logger: Logger,
    assertHeld?: () => void,
    records?: TurnRecords,
    /** Answers to tap, with the last part (actions: a reply resumed from the ledger goes as text alone), and until when. */
    question?: Pick<SendOptions, 'choices' | 'choicesExpireAt' | 'choicesLanguage'>,
  ): Promise<boolean> => {
    let turnTaken = false;
    for (const [index, part] of parts.entries()) {
      const last = index === parts.length - 1;
      const takeTurn = last && parts[0]?.turn !== undefined;
      const result = await sendPart(channel, message, part, logger, assertHeld, records, takeTurn, last && question?.choices?.length ? question : undefined);
      turnTaken = result.turnTaken;
      if (result.outcome === 'sent' || result.outcome === 'resent') {
        metrics.increment('reply_parts_sent_total', { channel: channel.id });
        logger.info('reply-sent', { part: part.part, channelMessageId: result.receipt.channelMessageId });
      }
    }
    return turnTaken;
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

export function createInboundHandler(options: InboundHandlerOptions): InboundHandler {
  const { transcripts, metrics } = options;
  const deliver = createLedgerSender(transcripts, metrics);

  /**
   * Runs post-turn and metering for the reply these parts hold, if no attempt has yet (`taken`:
   * this attempt took the turn already, with its last part's sent mark). `ran`: the turn this
   * attempt ran, whose payload the parts it stored carry (finished from memory, not parsed back).
   */
  const finishStoredTurn = async (
    channel: ChannelDefinition,
    parts: readonly MessageRecord[],
    delivered: boolean,
    logger: Logger,
    taken = false,
    ran?: TurnResult,
  ) => {
    const first = parts[0];
    // Parts this attempt stored carry their turn: taken with one HDEL instead of read back.
    const raw = !first
      ? undefined
      : first.turn !== undefined
        ? taken || (await transcripts.dropTurn(first._id))
          ? first.turn
          : undefined
        : await transcripts.takeTurn(first._id);
    if (raw === undefined) return;
    if (ran && first?.turn !== undefined) {
      await options.orchestrator.finishTurn(channel, ran, delivered);
      return;
    }
    let parsed: ReturnType<typeof StoredTurnSchema.safeParse>;
    try {
      parsed = StoredTurnSchema.safeParse(JSON.parse(raw));
    } catch (error) {
      logger.error('stored-turn-unreadable', { error });
      return;
    }
    if (!parsed.success) {
      logger.error('stored-turn-unreadable', { issues: formatIssues(parsed.error.issues, '(turn)') });
      return;
    }
    await options.orchestrator.finishTurn(channel, parsed.data, delivered);
  };

  /**
   * Answers a batch; its transcript records go to the outbox as one entry when it ends — also
   * when it fails (best effort: its retry, or giving up, records them again). Returns once the
   * reply is out, with what finishes the turn (post-turn, metering) still running in `finishing`.
   */
  const answer = async (
    turn: InboundBatch,
    signal: AbortSignal,
    assertHeld: () => void,
    records: TurnRecords,
    media: { turn?: MediaTurn },
    gate: TurnGate | undefined,
  ): Promise<{ finishing: Promise<void> } | undefined> => {
    let { message, earlier } = turn;
    const logger = options.logger.child({ conversationKey: message.conversationKey, messageId: message.messageId });
    const channel = options.channels.get(message.channel);
    if (!channel) {
      logger.error('inbound-unknown-channel', { channel: message.channel });
      metrics.increment('inbound_dropped_total', { reason: 'unknown_channel' });
      return;
    }
    const open = () =>
      transcripts.openConversation(
        {
          key: message.conversationKey,
          channel: channel.id,
          address: message.from.address,
          ...(message.from.displayName ? { displayName: message.from.displayName } : {}),
        },
        records,
      );
    // A customer's batch is opened while the takeover state is read (one round trip's wait, not
    // two; unused when a person holds it). A teammate's entry never opens it here.
    const opening = message.teammate ? undefined : open();
    if (options.takeover) {
      // While a person holds the conversation every message of the batch is relayed, none
      // answered; a takeover entry is always a batch of its own (the inbox never coalesces it).
      let handled: boolean;
      try {
        handled = await options.takeover([...earlier, message], channel, logger, { signal });
      } catch (error) {
        await opening?.catch(() => undefined);
        throw error;
      }
      if (handled) {
        await opening?.catch(() => undefined);
        return;
      }
    }
    const { conversationId, created, recent } = await (opening ?? open());
    // Media becomes text (summary, caption, transcription) for the transcript and parts for the
    // model, for every message of the batch: within the turn's media bytes (waiting for the
    // worker's room), a file named twice sent once, at most one transcription call per turn.
    // A guarded turn (a worker died answering this batch before) loads no media at all.
    const guarded = turn.guarded === true;
    if (guarded) logger.warn('turn-guarded', { messages: earlier.length + 1 });
    else media.turn = await options.media?.startTurn([...earlier, message], { conversationId, signal, logger });
    const batch: InboundMessage[] = [];
    const preparedMedia: (PreparedMedia | undefined)[] = [];
    for (const received of [...earlier, message]) {
      const prepared = await media.turn?.prepare(received);
      const text = prepared?.text ?? (guarded && received.media?.length ? `${received.text}\n${GUARDED_MEDIA_NOTE}`.trim() : received.text);
      batch.push({ ...received, text });
      preparedMedia.push(prepared);
      await transcripts.recordInbound(
        {
          conversationId,
          channel: channel.id,
          channelMessageId: received.messageId,
          text,
          receivedAt: new Date(received.receivedAt),
          ...(prepared ? { media: prepared.media } : {}),
        },
        records,
      );
    }
    const recentOf = (received: InboundMessage): RecentMessage => ({
      id: inboundMessageId(channel.id, received.messageId),
      direction: 'inbound',
      text: received.text,
    });
    // A reset anywhere in a burst: the messages before it stay in the old conversation's
    // history, the ones after it are the new conversation's first (the last reset counts).
    const resetAt = batch.findLastIndex((received) => channel.isResetCommand?.(received.text) === true);
    let turnMedia = preparedMedia;
    const last = batch.pop() ?? message;
    earlier = batch;
    message = last;
    const inbound = recentOf(message);
    // A burst reaches the model as consecutive customer messages, the last one the turn's own.
    const burst = earlier.map(recentOf);

    // Only an attempt that got as far as saving history can have stored reply parts worth
    // resuming; otherwise a stored reply (if any) still wins in saveReplyParts.
    const answeredBefore = recent.some((entry) => entry.id === inbound.id);
    let parts = answeredBefore ? await transcripts.replyParts(channel.id, message.messageId) : [];
    let result: TurnResult | undefined;
    let history = withMessages(recent, [...burst, inbound]);
    let resetOnly = false;
    if (parts.length === 0 && resetAt >= 0) {
      await options.orchestrator.resetConversation(conversationId);
      metrics.increment('conversation_resets_total', { channel: channel.id });
      const fresh = [...earlier, message].slice(resetAt + 1);
      logger.info('conversation-reset', { messagesAfter: fresh.length });
      history = fresh.map(recentOf);
      turnMedia = preparedMedia.slice(resetAt + 1);
      resetOnly = fresh.length === 0;
      if (!resetOnly) earlier = fresh.slice(0, -1);
    }
    if (parts.length > 0) {
      // What the earlier attempt stored and sent may never have reached the outbox.
      records.add(parts.flatMap(partRecords));
      logger.info('reply-resumed', { parts: parts.length });
    } else if (resetOnly) {
      await gate?.commit();
      parts = await transcripts.saveReplyParts(
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
    } else {
      void channel.transport.showTyping?.(message);
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
                history: modelHistory(
                  history.filter((entry) => entry.id !== tapId),
                  turnMedia.filter((_, index) => index !== tapAt),
                ),
              },
            }
          : {}),
      };
      // A model outage fails the turn for the queue's retry (the worker decides on the holding message).
      result = await options.orchestrator.runTurn(channel, {
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
      });
      await stream?.released();
      await channel.transport.flushDeltas?.(message);
      // Held while the batch may still grow (or the customer types); a restart meanwhile throws.
      await gate?.commit();
      // A turn cut short by a lost lock or a shutdown is retried by the queue, not answered.
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('turn aborted');
      metrics.increment('turns_total', { channel: channel.id, outcome: result.failed ? 'apology' : 'answered' });
      parts = await transcripts.saveReplyParts(
        {
          conversationId,
          channel: channel.id,
          replyTo: message.messageId,
          roleId: result.roleId,
          parts: channel.splitReply(result.text),
          turn: storedTurn(result),
          claimFirst: true,
        },
        records,
      );
    }
    logger.debug('reply-stored', { parts: parts.map((part) => part.status) });
    const replies = parts.map((part): RecentMessage => ({ id: part._id, direction: 'outbound', text: part.text }));
    let taken = false;
    try {
      // The history (which marks the reply stored, for a retry to resume) and the sends are
      // independent writes: the first part leaves without waiting a round trip for the history.
      // Both settle before the turn ends either way: a send still in flight when the turn fails
      // would race its own retry.
      const [sent, saved] = await Promise.allSettled([
        deliver(
          channel,
          message,
          parts,
          logger,
          assertHeld,
          records,
          result?.choices
            ? {
                choices: result.choices,
                ...(result.choicesExpireAt !== undefined ? { choicesExpireAt: result.choicesExpireAt } : {}),
                ...(result.choicesLanguage !== undefined ? { choicesLanguage: result.choicesLanguage } : {}),
              }
            : undefined,
        ),
        transcripts.saveRecent(conversationId, withMessages(history, replies), message.receivedAt),
      ]);
      if (sent.status === 'rejected') throw sent.reason;
      taken = sent.value;
      if (saved.status === 'rejected') throw saved.reason;
    } catch (error) {
      // The reply went out and this attempt took its turn: finished here, whatever failed after.
      // Otherwise a refusal for good ends the turn undelivered (the worker gives up on the
      // message); an outage is retried, and the attempt that delivers the reply finishes the turn.
      if (taken) await finishStoredTurn(channel, parts, true, logger, true, result);
      else if (classifyFailure(error) === 'deterministic') await finishStoredTurn(channel, parts, false, logger, false, result);
      throw error;
    }
    const finishing = finishStoredTurn(channel, parts, true, logger, taken, result);
    return { finishing: result ? finishing.then(() => options.onTurn?.(result)) : finishing };
  };

  return async (turn, signal, assertHeld, gate) => {
    const records = transcripts.turnRecords();
    // The turn's media bytes go back to the worker once the reply is out or the turn failed.
    const media: { turn?: MediaTurn } = {};
    let answered: { finishing: Promise<void> } | undefined;
    try {
      answered = await answer(turn, signal, assertHeld, records, media, gate);
    } catch (error) {
      media.turn?.end();
      await records
        .flush()
        .catch((flushError: unknown) => options.logger.warn('turn-records-unflushed', { conversationKey: turn.message.conversationKey, error: flushError }));
      throw error;
    }
    media.turn?.end();
    // Before the batch is acknowledged: a flush that fails fails the turn, and its retry records
    // it all again. The turn's finish (its own writes) runs meanwhile; both settle before the
    // turn ends either way, so nothing of it is still in flight when a retry starts.
    const [finished, flushed] = await Promise.allSettled([answered?.finishing, records.flush()]);
    if (finished.status === 'rejected') throw finished.reason;
    if (flushed.status === 'rejected') throw flushed.reason;
  };
}

/**
 * A model outage's holding message (see holding-notice.ts), sent by the turn worker through the
 * send ledger while a failed batch waits for its next attempt.
 */
export function createHoldingNoticeHandler(options: Omit<HoldingNoticeOptions, 'deliver'>): HoldingNotice {
  return createHoldingNotice({ ...options, deliver: createLedgerSender(options.transcripts, options.metrics) });
}

/**
 * What giving up on a message does: counts and logs it, records the inbound and its unsent parts as failed (and out of the
 * model's history), then sends one apology through the ledger unless the customer had this outage's (`apologised`).
 * Each step is best effort: an outage that outlived the budget may keep some from happening (the log says). Never throws.
 */
export function createGiveUpHandler(options: Omit<InboundHandlerOptions, 'orchestrator' | 'onTurn'>): GiveUpHandler {
  const { transcripts, metrics } = options;
  const deliver = createLedgerSender(transcripts, metrics);

  return async ({ message, earlier }, { reason, error, attempts, apologised }, assertHeld) => {
    const logger = options.logger.child({ conversationKey: message.conversationKey, messageId: message.messageId });
    /** The lock's fence: a worker that may have lost the conversation leaves giving up to its next holder. */
    const held = (step: string): boolean => {
      try {
        assertHeld();
        return true;
      } catch {
        logger.warn('give-up-left-to-next-holder', { reason, step });
        return false;
      }
    };
    if (!held('start')) return;
    // Counted once the batch is surely given up on here (a holder that lost the lock on the way counts nothing).
    const counted = () => {
      metrics.increment('inbound_failed_total', { channel: message.channel, reason }, earlier.length + 1);
      logger.error('inbound-failed', { reason, attempts, error, messages: earlier.length + 1 });
    };
    // A takeover entry (a teammate's message or action) is no customer message: nothing is
    // recorded as one and the customer gets no apology for it; the log and metric say it failed.
    const channel = message.teammate ? undefined : options.channels.get(message.channel);
    if (!channel) return counted();
    let conversationId = message.conversationKey;
    try {
      const conversation = await transcripts.openConversation({ key: message.conversationKey, channel: channel.id, address: message.from.address });
      conversationId = conversation.conversationId;
      if (!held('record')) return;
      for (const failed of [...earlier, message]) {
        await transcripts.markInboundFailed({
          conversationId,
          channel: channel.id,
          channelMessageId: failed.messageId,
          text: failed.text,
          receivedAt: new Date(failed.receivedAt),
          errorMessage: `given up on (${reason}): ${errorText(error)}`,
        });
      }
      const parts = await transcripts.replyParts(channel.id, message.messageId);
      // The failing attempts' records may never have reached the outbox: the parts as they stand first.
      const records = transcripts.turnRecords();
      records.add(parts.flatMap(partRecords));
      await records.flush();
      for (const part of parts.filter((entry) => unsentStatuses.has(entry.status))) {
        const why = part.status === 'pending' ? 'not sent: its message was given up on' : 'send outcome unknown and could not be resolved';
        await transcripts.markPartFailed(part._id, 'failed', undefined, why);
      }
      const dropped = new Set(parts.filter((part) => !sentStatuses.has(part.status)).map((part) => part._id));
      if (!parts.some((part) => sentStatuses.has(part.status))) {
        for (const failed of [...earlier, message]) dropped.add(inboundMessageId(channel.id, failed.messageId));
      }
      await transcripts.saveRecent(
        conversationId,
        conversation.recent.filter((entry) => !dropped.has(entry.id)),
        message.receivedAt,
      );
    } catch (recordError) {
      logger.error('inbound-failure-unrecorded', { error: recordError });
    }
    if (!held('apology')) return;
    counted();
    if (apologised) return logger.info('apology-covered', { reason });
    try {
      const apology = await transcripts.saveApology({
        conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        text: serviceWords(languageOf(message.metadata.language)).apology,
      });
      await deliver(channel, message, [apology], logger, assertHeld);
    } catch (apologyError) {
      // Not sent for the fence: the apology stays claimed for the next holder to resolve and send.
      if (!held('apology-send')) return;
      // Past the budget there is no retry: the apology was tried once (and the ledger says how it ended).
      await transcripts
        .markPartFailed(outboundMessageId(channel.id, message.messageId, APOLOGY_PART), 'failed', undefined, errorText(apologyError))
        .catch(() => undefined);
      logger.error('apology-failed', { error: apologyError });
    }
  };
}
