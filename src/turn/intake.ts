/**
 * The web side's hand-off to the workers: append the message to its conversation's inbox
 * (deduped by message id) and make sure a job exists for it. A duplicate still re-adds its
 * job (a no-op when the job exists), so a webhook retried after a failed enqueue heals itself.
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
      await enqueueTurn(queue, { conversationKey: message.conversationKey, messageId: message.messageId });
      return appended ? 'accepted' : 'duplicate';
    },
  };
}
