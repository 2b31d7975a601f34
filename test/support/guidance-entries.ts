/**
 * A business with many guidance entries (for the per-turn budget): `count` entries in the four
 * categories, most of them scoped to one of many widget sites, so that what is in scope for any
 * one turn fits the default budgets, as a set that publishing accepts must.
 */
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { GuidanceEntry, PublishedVersion } from '../../src/guidance/model.js';
import { createTurnGuidance } from '../../src/guidance/turn.js';
import type { TurnGuidance } from '../../src/orchestrator/turn-guidance.js';

/** Entries with no site: what a turn without a site has in scope. */
const UNSCOPED = 10;

export function guidanceEntries(count: number): GuidanceEntry[] {
  const categories = ['style', 'clarification', 'policy', 'escalation'] as const;
  return Array.from({ length: count }, (_, index): GuidanceEntry => {
    const category = categories[index % categories.length]!;
    return {
      id: `g_${index.toString(16).padStart(12, '0')}`,
      category,
      text: `Rule ${index} of the business: when a customer asks about product line ${index % 17}, mention its warranty and the two ways to contact the team.`,
      scope: index < UNSCOPED ? {} : { sites: [`site-${Math.floor(index / 5)}`] },
      ...(category === 'escalation' ? { team: index % 8 === 3 ? ('support' as const) : ('sales' as const) } : {}),
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
  });
}

/** The turn hook over `entries` as a published version, with the default budgets. */
export function guidanceHook(entries: GuidanceEntry[]): TurnGuidance {
  const version: PublishedVersion = { version: 1, entries, publishedAt: '2026-01-01T00:00:00.000Z' };
  return createTurnGuidance({
    current: () => version,
    promptTokens: 1500,
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
  });
}
