/**
 * Confirmed actions as the transcript page shows them: each change the assistant proposed, in
 * the conversation where it happened, with the summary the customer (or the team) was shown and
 * what became of it. A change only a teammate may run carries "Run it" and "Decline" on the live
 * page; the page never decides anything itself — the actions service's compare-and-set steps do,
 * once, whoever clicks first. This module is the port (the composition root maps the service's
 * records onto it) and the words the page uses for each state.
 */
import { changeLines } from '../contracts/action-summary.js';

/** One action as the page needs it. */
export interface PageAction {
  id: string;
  title: string;
  /** What the service showed (its own rendering of the frozen arguments). */
  summary: string;
  state: 'proposed' | 'confirmed' | 'running' | 'done' | 'failed' | 'cancelled' | 'expired';
  /** Who may run it: the customer who was asked, or a teammate. */
  confirmer: 'customer' | 'teammate';
  createdAt: Date;
  expiresAt: Date;
  /** Who confirmed it (a teammate's name, or "the customer"). */
  confirmedBy?: string | undefined;
  reason?: string | undefined;
  error?: string | undefined;
}

export type PageDecision = { outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: PageAction };

/** What the live page needs from the actions service. */
export interface PageActions {
  /** The conversation's actions, oldest first. */
  list(conversationId: string): Promise<PageAction[]>;
  /** A teammate runs or declines a change only a teammate may run; each happens once. */
  decide(conversationId: string, actionId: string, decision: { run: boolean; by: string; name: string }): Promise<PageDecision>;
}

/** Whether a teammate may still run or decline it now. */
export function awaitsTeam(action: PageAction, now: number): boolean {
  return action.confirmer === 'teammate' && action.state === 'proposed' && action.expiresAt.getTime() > now;
}

/** The action's state in words. */
export function actionStateText(action: PageAction, now: number): string {
  switch (action.state) {
    case 'proposed':
      if (action.expiresAt.getTime() <= now) return 'Expired: nothing was run.';
      return action.confirmer === 'teammate' ? 'Waiting for a teammate to run it or decline it.' : "Waiting for the customer's confirmation.";
    case 'confirmed':
    case 'running':
      return 'Running…';
    case 'done':
      return action.confirmedBy ? `Done · confirmed by ${action.confirmedBy}` : 'Done';
    case 'failed':
      return `Failed: ${action.error ?? 'the business system refused it'}`;
    case 'cancelled':
      return `Not run: ${action.reason ?? 'cancelled'}`;
    case 'expired':
      return 'Expired: nothing was run.';
  }
}

/** The change in a teammate's words, one line each: its title, then the summary's details. */
export const changeText = (action: Pick<PageAction, 'title' | 'summary'>): string => changeLines(action).join('\n');
