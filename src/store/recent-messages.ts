/**
 * A conversation's bounded recent messages (what the model sees too), from its Redis record:
 * never a MongoDB read. One owner for the read the widget's history and a hand-off's summary
 * both make.
 */
import type { RecentMessage, TranscriptStore } from './transcript-store.js';

export async function recentMessages(transcripts: Pick<TranscriptStore, 'recent'>, conversationId: string): Promise<RecentMessage[]> {
  return transcripts.recent(conversationId);
}
