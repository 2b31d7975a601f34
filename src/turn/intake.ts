/**
 * The web side's hand-off to the workers: append the message to its conversation's inbox
 * (deduped by message id) and make sure a job exists for it — unless a worker holds the
 * conversation's lock as it is appended: that holder answers it before letting go (see
 * `ConversationInbox.accept`), as it would for a job that found the lock taken. A duplicate
 * still re-adds its job (a no-op when the job exists), so a webhook retried after a failed
 * enqueue heals itself.
 */
import type { InboundMessage } from '../contracts/index.js';
import type { ConversationInbox } from '../queue/conversation-inbox.js';
import { enqueueTurn, type TurnQueue } from '../queue/turn-queue.js';
import type { TranscriptOutbox } from '../store/outbox.js';

export function createIntake(inbox: ConversationInbox, queue: TurnQueue, outbox?: Pick<TranscriptOutbox, 'assertRoom'>) {
  return {
    async accept(message: InboundMessage): Promise<'accepted' | 'duplicate'> {
      // At TRANSCRIPT_OUTBOX_MAX (MongoDB far behind) new messages wait: a 503 the sender retries.
      outbox?.assertRoom();
      const appended = await inbox.accept(message);
      if (appended !== 'held') await enqueueTurn(queue, { conversationKey: message.conversationKey, messageId: message.messageId });
      return appended === 'duplicate' ? 'duplicate' : 'accepted';
    },
  };
}
