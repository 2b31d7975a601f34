/**
 * The decision every leg makes before its model runs — role, tier, facts and the exact tools
 * offered — so a continuation leg can run on any worker without judging again. This process
 * keeps a bounded copy of each (`keep`); a leg that leaves a question for the customer stores
 * its decision in Redis before the question (`put`), where it stays for other workers until it
 * expires, after which a continuation is refused, never judged afresh. A leg that asks nothing
 * writes no decision: only a question's answer continues a leg.
 */
import type { RedisClient } from '../../redis.js';
import { z } from 'zod';
import { DECISION_TTL_SECONDS, stateKeys } from './keys.js';

const StoredDecisionSchema = z.object({
  runId: z.string(),
  roleId: z.string(),
  tier: z.enum(['fast', 'smart']),
  inScope: z.boolean(),
  degraded: z.boolean(),
  facts: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  factsVersion: z.number().int().nonnegative(),
  offeredTools: z.array(z.string()),
});
export type StoredDecision = z.infer<typeof StoredDecisionSchema>;

const LOCAL_COPIES = 1000;

export interface DecisionStore {
  /** Keeps the decision in this process only (a leg's, before its model runs). */
  keep(conversationKey: string, decision: StoredDecision): void;
  /** Keeps it and stores it for every worker (a leg that leaves a question: its answer may come to any). */
  put(conversationKey: string, decision: StoredDecision): Promise<void>;
  /** The stored decision, or undefined when it has expired (or never existed). */
  get(conversationKey: string, runId: string): Promise<StoredDecision | undefined>;
}

export function createDecisionStore(redis: RedisClient): DecisionStore {
  const local = new Map<string, StoredDecision>();
  const keep = (key: string, decision: StoredDecision) => {
    if (local.size >= LOCAL_COPIES) local.delete(local.keys().next().value as string);
    local.set(key, decision);
  };
  return {
    keep(conversationKey, decision) {
      keep(stateKeys.decision(conversationKey, decision.runId), decision);
    },
    async put(conversationKey, decision) {
      const key = stateKeys.decision(conversationKey, decision.runId);
      keep(key, decision);
      await redis.set(key, JSON.stringify(decision), 'EX', DECISION_TTL_SECONDS);
    },
    async get(conversationKey, runId) {
      const key = stateKeys.decision(conversationKey, runId);
      const copy = local.get(key);
      if (copy) return copy;
      const raw = await redis.get(key);
      if (raw === null) return undefined;
      try {
        const parsed = StoredDecisionSchema.safeParse(JSON.parse(raw));
        return parsed.success ? parsed.data : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
