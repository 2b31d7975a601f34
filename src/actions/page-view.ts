/**
 * Confirmed actions as the transcript page shows them, and a teammate's decision from the page:
 * Redis holds the live state (a day), MongoDB the older records.
 */
import type { Actor } from '../handoff/handoff-store.js';
import type { PageAction, PageActions } from '../transcripts/page-actions.js';
import type { createActionRecords } from './action-records.js';
import type { ActionRecord, ActionStore } from './action-store.js';
import type { Actions } from './actions.js';

type ActionRecords = ReturnType<typeof createActionRecords>;

/** Tells the customer the team's decision on their change, once (the entry's id is the action's). */
export type TellDecision = (record: ActionRecord, by: Actor) => Promise<void>;

/** An action as the transcript page shows it. */
function pageActionOf(record: ActionRecord): PageAction {
  return {
    id: record._id,
    title: record.title,
    summary: record.summary,
    state: record.state,
    confirmer: record.confirmer ?? 'customer',
    createdAt: new Date(record.createdAt),
    expiresAt: new Date(record.expiresAt),
    confirmedBy: record.confirmedBy
      ? record.confirmedBy.via === 'teammate'
        ? (record.confirmedBy.name ?? record.confirmedBy.address)
        : 'the customer'
      : undefined,
    reason: record.reason,
    error: record.error,
  };
}

/** The transcript page's view of a conversation's actions: Redis holds the live state (a day), MongoDB the older records. */
export function pageActions(actions: Actions, store: ActionStore, records: ActionRecords, tell: TellDecision): PageActions {
  return {
    async list(conversationId) {
      const [live, recorded] = await Promise.all([store.ofConversation(conversationId), records.ofConversation(conversationId)]);
      const byId = new Map(recorded.map((record) => [record._id, record]));
      for (const record of live) byId.set(record._id, record);
      return [...byId.values()].sort((left, right) => left.createdAt.localeCompare(right.createdAt)).map(pageActionOf);
    },
    async decide(conversationId, actionId, decision) {
      const decided = await actions.decide(conversationId, actionId, decision);
      if (decided.outcome !== 'decided') return decided;
      await tell(decided.action, { id: decision.by, name: decision.name, via: 'page' });
      return { outcome: 'decided', action: pageActionOf(decided.action) };
    },
  };
}
