/**
 * Confirmed actions as MongoDB holds them (written by the transcript writer from `action` outbox
 * records): the operator's list behind `GET /admin/actions`. Never read on a turn's path.
 */
import type { Connection } from 'mongoose';
import { ACTIONS_COLLECTION } from '../store/transcript-writer.js';
import { ActionRecordSchema, type ActionRecord } from './action-store.js';

export function createActionRecords(connection: Connection) {
  return {
    async list(options: { state?: string; tool?: string; limit: number }): Promise<unknown[]> {
      const filter = { ...(options.state ? { state: options.state } : {}), ...(options.tool ? { tool: options.tool } : {}) };
      return connection.collection(ACTIONS_COLLECTION).find(filter).sort({ createdAt: -1 }).limit(options.limit).toArray();
    },
    /** A conversation's recorded actions, oldest first (the transcript page; not a turn's path). */
    async ofConversation(conversationId: string, limit = 50): Promise<ActionRecord[]> {
      const documents = await connection.collection(ACTIONS_COLLECTION).find({ conversationId }).sort({ createdAt: -1 }).limit(limit).toArray();
      return documents
        .flatMap((document) => {
          const parsed = ActionRecordSchema.safeParse(document);
          return parsed.success ? [parsed.data] : [];
        })
        .reverse();
    },
    /** One action's conversation (by `_id`), to find its state in Redis. */
    async conversationOf(actionId: string): Promise<string | undefined> {
      const document = await connection.collection<{ _id: string; conversationId?: string }>(ACTIONS_COLLECTION).findOne({ _id: actionId });
      return typeof document?.conversationId === 'string' ? document.conversationId : undefined;
    },
  };
}
