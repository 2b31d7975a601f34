/**
 * The web side's hand-off to the workers: append the message to its conversation's inbox
 * (deduped by message id) and make sure a job exists for it — unless a worker holds the
 * conversation's lock as it is appended, or a job added for the conversation has not yet tried
 * the lock: then the lock's next holder answers it (see `ConversationInbox.accept`), and a job
 * of its own would only find the lock taken and complete. A duplicate still re-adds its job (a
 * no-op when the job exists), so a webhook retried after a failed enqueue heals itself.
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
      if (appended === 'appended' || appended === 'duplicate') {
        try {
          await enqueueTurn(queue, { conversationKey: message.conversationKey, messageId: message.messageId });
        } catch (error) {
          // No job after all: messages appended next must not count on one (best effort; the mark expires).
          if (appended === 'appended') await inbox.unmarkQueued(message.conversationKey).catch(() => undefined);
          throw error;
        }
      }
      return appended === 'duplicate' ? 'duplicate' : 'accepted';
    },
  };
}
