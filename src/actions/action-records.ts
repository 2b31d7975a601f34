/**
 * Confirmed actions as MongoDB holds them (written by the transcript writer from `action` outbox
 * records): the operator's list behind `GET /admin/actions`. Never read on a turn's path.
 */
import type { Connection } from 'mongoose';
import { ACTIONS_COLLECTION } from '../store/transcript-writer.js';

export function createActionRecords(connection: Connection) {
  return {
    async list(options: { state?: string; tool?: string; limit: number }): Promise<unknown[]> {
      const filter = { ...(options.state ? { state: options.state } : {}), ...(options.tool ? { tool: options.tool } : {}) };
      return connection.collection(ACTIONS_COLLECTION).find(filter).sort({ createdAt: -1 }).limit(options.limit).toArray();
    },
    /** One action's conversation (by `_id`), to find its state in Redis. */
    async conversationOf(actionId: string): Promise<string | undefined> {
      const document = await connection.collection<{ _id: string; conversationId?: string }>(ACTIONS_COLLECTION).findOne({ _id: actionId });
      return typeof document?.conversationId === 'string' ? document.conversationId : undefined;
    },
  };
}
