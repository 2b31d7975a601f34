/**
 * `src/handoff/` knows no channel or role: whether the customer's address reaches them comes
 * from the channel (`CustomerReach`), which facts a teammate sees from the role
 * (`privateFacts`), and a booking link from the team's configuration — for any team.
 */
import { describe, expect, test } from '@jest/globals';
import { whatsappReach } from '../../channels/whatsapp/reach.js';
import { createHandoffService, type HandoffRequestInput } from '../../src/handoff/handoff-service.js';
import type { HandoffStore } from '../../src/handoff/handoff-store.js';
import { createHandoffTools, type CustomerReach } from '../../src/handoff/handoff-tools.js';
import { buildNotice } from '../../src/handoff/notice.js';
import type { NoticeQueue } from '../../src/handoff/notice-queue.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { ToolCallContext } from '../../src/contracts/tool.js';
import { roster } from '../../roles/index.js';

const context = (address: string, roleId: string): ToolCallContext => ({
  conversationId: address,
  runId: 'run-1',
  roleId,
  channelId: 'anywhere',
  customer: { address, displayName: 'Ana' },
  caller: { kind: 'anonymous' },
  latestMessage: 'I want a person',
  facts: { wants_demo: true, interested_plan: 'Pro', handoffUnavailable: true },
  session: {},
  metadata: {},
  signal: new AbortController().signal,
});

/** The hand-off service over an in-memory store: what the tool asked for, and the outcome. */
function recordingTools(reach: CustomerReach | undefined, bookingUrl?: string) {
  const requests: HandoffRequestInput[] = [];
  const store = {
    open: async (request: Parameters<HandoffStore['open']>[0]) => {
      requests.push(request);
      const at = new Date(0);
      return { handoff: { ...request, _id: 'ho_1', status: 'open' as const, requests: [], createdAt: at, updatedAt: at }, created: true };
    },
  } as unknown as HandoffStore;
  const service = createHandoffService({
    teams: { support: { label: 'Support team', whatsapp: [], members: [], webhooks: [], responseTime: 'today', ...(bookingUrl ? { bookingUrl } : {}) } },
    store,
    notices: { enqueue: async () => undefined } as unknown as NoticeQueue,
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
  });
  const tools = createHandoffTools({
    service,
    recentMessages: async () => [],
    ...(reach ? { reach } : {}),
    privateFacts: (roleId) => roster.find((role) => role.id === roleId)?.privateFacts ?? [],
  });
  return { requests, support: tools.find((tool) => tool.name === 'open_support_chat')! };
}

describe('hand-off contracts', () => {
  test("a role's private facts never reach the team; its other facts do", async () => {
    const { requests, support } = recordingTools(whatsappReach);
    await support.execute({ reason: 'Cannot log in after the reset' }, context('whatsapp:+447700904001', 'sales'));
    expect(requests[0]?.facts).toEqual({ wants_demo: true, interested_plan: 'Pro' });
    const team = { label: 'Support team', whatsapp: [], members: [], webhooks: [], responseTime: 'today' };
    const notice = buildNotice({
      handoff: { ...requests[0]!, _id: 'ho_1', status: 'open', requests: [], destinations: [], createdAt: new Date(0), updatedAt: new Date(0) },
      team,
      transcriptUrl: 'https://t.example/x',
      business: 'B',
    });
    expect(notice.text).toContain('Established: wants demo: true · interested plan: Pro');
    expect(notice.text).not.toMatch(/handoff ?unavailable/i);
  });

  test("the channel's reach says how the customer is contacted; without one a contact is required", async () => {
    const reached = recordingTools({ contactOf: (address) => ({ phone: address.replace('sms:', '') }), phrase: 'by text message' });
    const outcome = await reached.support.execute({ reason: 'Cannot log in after the reset' }, context('sms:+447700904002', 'support'));
    expect(outcome).toMatchObject({ nextSteps: 'The Support team will contact the customer by text message today.' });
    expect(reached.requests[0]?.contact).toEqual({ phone: '+447700904002' });

    const unreached = recordingTools(undefined);
    await expect(unreached.support.execute({ reason: 'Cannot log in after the reset' }, context('web:visitor-1', 'support'))).rejects.toThrow(
      'Ask the customer for an email address or a phone number first',
    );
    expect(unreached.requests).toHaveLength(0);
  });

  test("any team's configured booking link is offered, not only sales'", async () => {
    const { support } = recordingTools(whatsappReach, 'https://book.example.test/support');
    const outcome = await support.execute({ reason: 'Cannot log in after the reset' }, context('whatsapp:+447700904003', 'support'));
    expect(outcome).toMatchObject({
      bookingUrl: 'https://book.example.test/support',
      customerText: 'The Support team will contact you here on WhatsApp today. You can also pick a time: https://book.example.test/support',
    });
  });
});
