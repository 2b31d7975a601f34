/**
 * The web side's hand-off to the workers: append the message to its conversation's inbox
 * (deduped by message id) and make sure a job exists for it — unless a worker holds the
 * conversation's lock as it is appended, or a job added for the conversation has not yet tried
 * the lock: then the lock's next holder answers it (see `ConversationInbox.accept`), and a job
 * of its own would only find the lock taken and complete. A duplicate still re-adds its job (a
 * no-op when the job exists).
 *
 * Each message is noted in the intake ledger with its inbox write (one round trip) and crossed
 * off once its job exists or it needs none; a worker's sweeper adds a job for a note that stays.
 * (Cross-offs go together, one command per shard within a second.)
 * So the sender is answered once the message is in its inbox and noted — the job's add follows,
 * not waited on: an add that fails is retried in the background (a doubling delay apart; the
 * messages appended meanwhile may ride on that job), and a web process that dies before the add,
 * or with those retries, leaves the note for the sweeper. Nothing appended is stranded, and the
 * sender's acknowledgement waits on one Redis round trip, not two.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.js';
import type { InboundMessage } from '../contracts/index.js';
import type { ConversationInbox } from '../queue/conversation-inbox.js';
import type { IntakeLedger, IntakeNote } from '../queue/intake-ledger.js';
import { enqueueTurn, type TurnQueue } from '../queue/turn-queue.js';
import type { TranscriptOutbox } from '../store/outbox.js';

/** Background tries at adding a job whose add failed, the first after ENQUEUE_RETRY_FIRST_MS, doubling (about 4 minutes in all). */
const ENQUEUE_RETRIES = 8;
const ENQUEUE_RETRY_FIRST_MS = 1_000;

export function createIntake(inbox: ConversationInbox, queue: TurnQueue, ledger: IntakeLedger, outbox?: Pick<TranscriptOutbox, 'assertRoom'>, logger?: Logger) {
  /** Not awaited, and sent with the shard's other cross-offs: a note left behind costs one harmless job when the sweeper finds it. */
  const crossOff = (job: IntakeNote) => ledger.clearSoon(job);

  const retryEnqueue = async (job: IntakeNote, error: unknown) => {
    logger?.warn('turn-enqueue-retrying', { ...job, error });
    for (let attempt = 1; attempt <= ENQUEUE_RETRIES; attempt += 1) {
      // Unref'd: a stopping process does not wait for it (the note is left for a worker's sweeper).
      await sleep(ENQUEUE_RETRY_FIRST_MS * 2 ** (attempt - 1), undefined, { ref: false });
      try {
        await enqueueTurn(queue, job);
        crossOff(job);
        logger?.info('turn-enqueued-late', { ...job, attempt });
        return;
      } catch (retryError) {
        if (attempt === ENQUEUE_RETRIES) logger?.error('turn-enqueue-failed', { ...job, attempts: attempt, error: retryError });
      }
    }
  };

  /** Adds the job `accept` asked for; a failure is retried in the background (the note stays until a job exists). */
  const enqueue = async (job: IntakeNote, appended: 'appended' | 'duplicate') => {
    try {
      await enqueueTurn(queue, job);
    } catch (error) {
      // No job after all: messages appended next must not count on one (best effort; the mark expires).
      if (appended === 'appended') await inbox.unmarkQueued(job.conversationKey).catch(() => undefined);
      void retryEnqueue(job, error);
      throw error;
    }
    crossOff(job);
  };

  return {
    async accept(message: InboundMessage): Promise<'accepted' | 'duplicate'> {
      // At TRANSCRIPT_OUTBOX_MAX (MongoDB far behind) new messages wait: a 503 the sender retries.
      outbox?.assertRoom();
      const job = { conversationKey: message.conversationKey, messageId: message.messageId };
      // Sent ahead of the inbox write on the same connection (neither waits for the other): on one
      // Redis no crash can leave the message appended and not noted.
      const noted = ledger.note(job).then(
        () => true,
        (error: unknown) => {
          logger?.warn('intake-note-failed', { ...job, error });
          return false;
        },
      );
      const [appended, durable] = await Promise.all([inbox.accept(message), noted]);
      if (appended === 'appended' || appended === 'duplicate') {
        // Without its note, the message is safe only once its job exists: the sender waits for it (a 503 if it fails).
        if (!durable) await enqueue(job, appended);
        else void enqueue(job, appended).catch(() => undefined);
      } else crossOff(job);
      return appended === 'duplicate' ? 'duplicate' : 'accepted';
    },
  };
}
