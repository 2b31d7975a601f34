/**
 * The customer's answers to the satisfaction question (`csat.ts` asks it): a rating — a tap on
 * this question's list or buttons, or a typed 1–5 — stored and answered with the invitation to
 * comment; a second tap on a rated question answered "already noted", logged and counted; the
 * words after a rating left to the turn, whose judge says whether they are a comment
 * (`feedback`, the orchestrator's `TurnFeedback`): a comment is stored and thanked, anything else
 * answered by the assistant while the comment stops waiting.
 */
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { TurnFeedback } from '../orchestrator/turn-feedback.js';
import { csatWords } from '../words/csat-words.js';
import { languageOf } from '../words/language.js';
import type { CsatState, PendingQuestion } from './csat-state.js';
import type { CsatStore } from './csat-store.js';
import { CSAT_REPLY_PART, type CsatTranscript } from './csat-transcript.js';

export const TAP_PREFIX = 'csat:';
/** Conversations remembered without a comment waiting, at most (then forgotten: their turns ask Redis). */
const MAX_NOTED = 10_000;
const TYPED_SCORE = /^\s*([1-5])\s*(?:\/\s*5|⭐+|stars?)?\s*[.!]?\s*$/iu;

/** A tap's question time and score, from its choice id. */
export function tapOf(message: InboundMessage): { askedAt: number; score: number } | undefined {
  const choice = message.metadata.choice;
  const match = choice?.startsWith(TAP_PREFIX) ? /^csat:(\d+):([1-5])$/.exec(choice) : null;
  return match ? { askedAt: Number(match[1]), score: Number(match[2]) } : undefined;
}

interface AnswerOptions {
  commentMs: number;
  state: CsatState;
  store: CsatStore;
  transcript: CsatTranscript;
  logger: Logger;
  metrics: Metrics;
  now: () => number;
}

export function createCsatAnswers(options: AnswerOptions) {
  const { state, store, logger, metrics, now } = options;

  /** The service's words answering the customer's `message` (one per message: its own ledger part). */
  const reply = (channel: ChannelDefinition, message: InboundMessage, text: string) =>
    options.transcript.say(channel, {
      seen: { channel: message.channel, conversationKey: message.conversationKey, from: message.from, metadata: message.metadata },
      replyTo: message.messageId,
      part: CSAT_REPLY_PART,
      text,
    });

  /** A tap on a question that no longer waits: "already noted" when it was rated, else nothing more; logged and counted either way. */
  const tapAgain = async (batch: readonly InboundMessage[], channel: ChannelDefinition, askedAt: number, rated: number | undefined, language: string) => {
    const message = batch.at(-1);
    if (!message) return;
    const noted = rated === askedAt;
    metrics.increment('csat_total', { channel: channel.id, outcome: noted ? 'tapped_again' : 'tapped_late' });
    logger.info('csat-tapped-again', { conversationKey: message.conversationKey, rated: noted });
    await options.transcript.heard(channel, batch);
    if (noted) await reply(channel, message, csatWords(languageOf(language)).alreadyNoted);
  };

  /** The batch answers the pending question (a score, or the comment after one): stored and thanked, no turn. */
  const answer = async (
    batch: readonly InboundMessage[],
    pending: PendingQuestion,
    channel: ChannelDefinition,
  ): Promise<'handled' | 'recorded' | 'judged' | 'none'> => {
    const message = batch.at(-1);
    if (!message || now() > pending.until) return 'none';
    const key = message.conversationKey;
    const words = csatWords(languageOf(pending.language));
    const tap = batch.map(tapOf).findLast((found) => found !== undefined);
    const typed = pending.stage === 'score' && batch.length === 1 && !message.media?.length ? TYPED_SCORE.exec(message.text) : null;
    const score = tap?.askedAt === pending.askedAt ? tap.score : typed ? Number(typed[1]) : undefined;
    if (score !== undefined && pending.stage === 'comment') {
      // A second tap on the question already rated: the first rating stands.
      await tapAgain(batch, channel, pending.askedAt, pending.askedAt, pending.language);
      return 'handled';
    }
    if (score !== undefined) {
      // A rating inside a burst of other messages: recorded, and the rest is the assistant's (its turn records them all).
      const alone = batch.every((entry) => tapOf(entry) !== undefined || TYPED_SCORE.test(entry.text));
      // Redis first and the customer's next words, then MongoDB (never a MongoDB wait before a send): a write
      // that fails is logged, and the comment's write carries the score again.
      const rated: PendingQuestion = { ...pending, score, answeredVia: tap ? 'tap' : 'typed', answeredAt: now() };
      await state.rated(key, alone ? { ...rated, stage: 'comment', until: now() + options.commentMs } : rated);
      if (!alone) await state.clearPending(key);
      metrics.increment('csat_total', { channel: channel.id, outcome: 'answered' });
      logger.info('csat-answered', { conversationKey: key, score });
      if (alone) {
        await options.transcript.heard(channel, batch);
        await reply(channel, message, words.commentPrompt);
      }
      await store.answered(key, rated).catch((error: unknown) => logger.warn('csat-record-failed', { conversationKey: key, error }));
      return alone ? 'handled' : 'recorded';
    }
    if (pending.stage === 'score' || tap) return 'none';
    // Words after a rating: whether they are a comment or something to answer is the turn's judge's to say (`feedback`).
    const written = batch.some((entry) => entry.text.trim());
    if (!written || batch.some((entry) => entry.media?.length || entry.metadata.choice)) return 'none';
    return 'judged';
  };

  /**
   * Conversations whose customer's batch found no comment waiting (the hook's note, this process):
   * their turn asks Redis nothing more. Only a rating in a batch of that conversation opens a
   * comment, and batches of one conversation run one at a time.
   */
  const noComment = new Set<string>();
  const noted = (conversationKey: string, pending: PendingQuestion | undefined, known: boolean) => {
    if (noComment.size >= MAX_NOTED) noComment.clear();
    if (!known || pending?.stage === 'comment') noComment.delete(conversationKey);
    else noComment.add(conversationKey);
  };

  /** The comment after a rating, as the turn's judge decides it (`TurnFeedback`). */
  const feedback: TurnFeedback = {
    async awaiting(conversationKey) {
      if (noComment.delete(conversationKey)) return false;
      const pending = await state.pending(conversationKey);
      return pending?.stage === 'comment' && now() <= pending.until;
    },
    async comment({ conversationId, channel, text }) {
      const pending = await state.pending(conversationId);
      const words = csatWords(languageOf(pending?.language));
      if (!pending || pending.stage !== 'comment') return words.thanks;
      await state.clearPending(conversationId);
      metrics.increment('csat_total', { channel, outcome: 'commented' });
      logger.info('csat-commented', { conversationKey: conversationId });
      await store
        .commented(conversationId, pending, text.trim(), now())
        .catch((error: unknown) => logger.warn('csat-record-failed', { conversationKey: conversationId, error }));
      return words.thanks;
    },
    async moveOn(conversationId) {
      await state.clearPending(conversationId);
    },
  };

  return { answer, tapAgain, feedback, noted };
}
