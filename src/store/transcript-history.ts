/**
 * What is read from MongoDB rather than the hot copy (never a turn's: a whole conversation for
 * the transcript page and exports, retention's purge) and the collections' indexes.
 */
import type { TranscriptStore } from './transcript-types.js';
import type { transcriptModels } from './transcript-schemas.js';

type HistoryMethods = Pick<TranscriptStore, 'ensureIndexes' | 'conversationMessages' | 'purgeOlderThan'>;

export function createTranscriptHistory({ conversations, messages, deliveries }: ReturnType<typeof transcriptModels>): HistoryMethods {
  return {
    async ensureIndexes() {
      await Promise.all([conversations.createIndexes(), messages.createIndexes(), deliveries.createIndexes()]);
    },

    async conversationMessages(conversationId) {
      return messages.find({ conversationId }).sort({ createdAt: 1, _id: 1 }).lean().exec();
    },

    async purgeOlderThan(cutoff) {
      const [removedMessages, , removedConversations] = await Promise.all([
        messages.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        deliveries.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        conversations.deleteMany({ updatedAt: { $lt: cutoff } }).exec(),
      ]);
      return { messages: removedMessages.deletedCount, conversations: removedConversations.deletedCount };
    },
  };
}
