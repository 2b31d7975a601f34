/**
 * A hand-off opened by a process that dies before its notices are queued: the record is in
 * MongoDB with every notice `pending`, and the request rejects with "process killed". The
 * recovery suites then start a worker and expect the team to be told once.
 */
import { createHandoffService } from '../../src/handoff/handoff-service.js';
import { parseTeams } from '../../src/handoff/teams.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { Harness } from './harness.js';

export function openStrandedHandoff(harness: Harness, teamsJson: string, customer: string) {
  const dying = createHandoffService({
    teams: parseTeams(teamsJson),
    store: harness.services.handoffs,
    notices: {
      enqueue: async () => {
        throw new Error('process killed before the notices were queued');
      },
    } as unknown as Parameters<typeof createHandoffService>[0]['notices'],
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
  });
  return dying.request({
    team: 'sales',
    reason: 'Demo of the Pro plan for a team of 12',
    channel: 'whatsapp',
    conversationId: customer,
    roleId: 'sales',
    customer: { address: customer, name: 'Ana' },
    contact: { whatsapp: customer },
    facts: {},
    lastMessages: [{ direction: 'inbound', text: 'Can I get a demo?' }],
  });
}
