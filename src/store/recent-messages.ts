/**
 * A conversation's bounded recent messages (what the model sees too), read by its `_id` only:
 * a query by conversation id would scan every stored message on FerretDB. One owner for the
 * read the widget's history and a hand-off's summary both make.
 */
import type { RecentMessage, TranscriptStore } from './transcript-store.js';

export async function recentMessages(transcripts: Pick<TranscriptStore, 'conversations'>, conversationId: string): Promise<RecentMessage[]> {
  return (await transcripts.conversations.findById(conversationId, { recent: 1 }).lean().exec())?.recent ?? [];
}
