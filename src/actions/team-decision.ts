/**
 * A teammate runs or declines a change handed to the team, once (the same compare-and-set
 * steps as a customer's confirmation). The caller it runs for is the one who proposed it.
 */
import type { ActionRecord, ActionStore } from './action-store.js';
import { leaseEnd, proposerContext, type ActionRunner } from './action-runner.js';

export type TeamDecision = { outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: ActionRecord };

export function createTeamDecision(options: { store: ActionStore; runner: ActionRunner; now: () => number }) {
  const { store, now } = options;
  const { move, run } = options.runner;

  return async (conversationKey: string, actionId: string, decision: { run: boolean; by: string; name?: string }): Promise<TeamDecision> => {
    const name = decision.name ?? decision.by;
    const record = await store.get(conversationKey, actionId);
    if (!record) return { outcome: 'unknown' };
    if (record.confirmer !== 'teammate') return { outcome: 'not-for-team' };
    let current: ActionRecord | undefined = record;
    if (current.state === 'proposed' && now() > Date.parse(current.expiresAt))
      current = await move(current, ['proposed'], 'expired', { reason: 'no decision in time' });
    else if (current.state === 'proposed' && !decision.run) current = await move(current, ['proposed'], 'cancelled', { reason: `declined by ${name}` });
    else if (current.state === 'proposed') {
      current = await move(current, ['proposed'], 'confirmed', { confirmedBy: { address: decision.by, via: 'teammate', name } });
    }
    // Running for another click right now (no conversation lock serialises teammates): reported, never called again
    // until its outcome is surely lost (well past the MCP call's timeout).
    if (current?.state === 'running' && now() < leaseEnd(current)) return { outcome: 'decided', action: current };
    if (current && (current.state === 'confirmed' || current.state === 'running')) current = await run(current, proposerContext(current), 'report');
    return current ? { outcome: 'decided', action: current } : { outcome: 'unknown' };
  };
}
