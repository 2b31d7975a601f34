/**
 * The notice worker on the real Redis (BullMQ) with a clock the test controls: a hand-off opened
 * while its team is closed has its WhatsApp notice held as a delayed job until the team opens,
 * while its webhook goes at once; when the opening comes the held notice is sent, once. A team
 * with `notifyOutOfHours` is notified at once.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, expect, test } from '@jest/globals';
import type { Worker } from 'bullmq';
import type { HandoffRecord, HandoffStore, NoticeRecord } from '../../src/handoff/handoff-store.js';
import { createNoticeQueue, createNoticeWorker, type NoticeJob } from '../../src/handoff/notice-queue.js';
import type { Team } from '../../src/handoff/teams.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';

const MEMBER = 'whatsapp:+34600000202';
const hours = { timeZone: 'Europe/Paris', weekly: { mon: ['09:00-18:00'], fri: ['09:00-17:00'] }, closed: ['2026-03-23'] };
const team: Team = {
  label: 'Support team',
  whatsapp: [MEMBER],
  members: [],
  webhooks: ['https://hooks.example.test/s'],
  responseTime: 'within two hours',
  hours,
};
// Friday 20 March 2026, 22:00 CET; Monday 23rd is a closed date, so the team is back Friday 27th 09:00 CET.
const FRIDAY_NIGHT = Date.parse('2026-03-20T21:00:00Z');
const OPENING = Date.parse('2026-03-27T08:00:00Z');

function memoryStore(handoff: HandoffRecord) {
  const notices = new Map<string, NoticeRecord>(
    handoff.destinations.map((destination) => [
      `${handoff._id}|${destination.id}`,
      {
        _id: `${handoff._id}|${destination.id}`,
        handoffId: handoff._id,
        destination,
        status: 'pending',
        attempts: 0,
        createdAt: handoff.createdAt,
        updatedAt: handoff.createdAt,
      },
    ]),
  );
  const set = (id: string, patch: Partial<NoticeRecord>) => {
    const notice = notices.get(id);
    if (notice) notices.set(id, { ...notice, ...patch });
  };
  const store: Partial<HandoffStore> = {
    get: async () => handoff,
    notice: async (handoffId, destinationId) => notices.get(`${handoffId}|${destinationId}`),
    claimNotice: async (id) => {
      if (notices.get(id)?.status !== 'pending') return false;
      set(id, { status: 'sending', claimedAt: new Date() });
      return true;
    },
    reclaimNotice: async (id) => set(id, { status: 'sending' }),
    markNoticeSent: async (id, channelMessageId) => set(id, { status: 'sent', ...(channelMessageId ? { channelMessageId } : {}) }),
    releaseNotice: async (id) => set(id, { status: 'pending' }),
    markNoticeFailed: async (id, status) => set(id, { status }),
    recordRef: async () => undefined,
  };
  return { store: store as HandoffStore, notices };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function rig(forTeam: Team) {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('global-setup did not publish TEST_REDIS_URL');
  const connection = { url, maxRetriesPerRequest: null };
  const prefix = `{held-${randomUUID().slice(0, 8)}}`;
  const handoff: HandoffRecord = {
    _id: `ho_${randomUUID().slice(0, 8)}`,
    team: 'support',
    status: 'open',
    reason: 'Cannot log in',
    requests: [],
    channel: 'whatsapp',
    conversationId: 'whatsapp:+447700900001',
    roleId: 'support',
    customer: { address: 'whatsapp:+447700900001' },
    contact: { whatsapp: 'whatsapp:+447700900001' },
    facts: {},
    lastMessages: [],
    destinations: [
      { id: MEMBER, kind: 'whatsapp', target: MEMBER },
      { id: 'webhook:0', kind: 'webhook', target: 'https://hooks.example.test/s' },
    ],
    createdAt: new Date(FRIDAY_NIGHT),
    updatedAt: new Date(FRIDAY_NIGHT),
  };
  const { store, notices } = memoryStore(handoff);
  let clock = FRIDAY_NIGHT + 1000;
  const sent: { to: string; text: string }[] = [];
  const options = { connection, prefix, attempts: 3, backoffMs: 20 };
  const queue = createNoticeQueue(options);
  const worker: Worker<NoticeJob> = createNoticeWorker({
    ...options,
    store,
    teams: { support: forTeam },
    senders: {
      whatsapp: async (to, notice) => (sent.push({ to, text: notice.text }), `SM${randomUUID().replace(/-/g, '')}`),
      webhook: async (to, notice) => void sent.push({ to, text: notice.webhook.text }),
    },
    transcriptUrl: () => 'https://a.example.test/t',
    business: 'Harbour Lane',
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
    now: () => clock,
  });
  closers.push(
    () => queue.close(),
    () => worker.close(),
  );
  await worker.waitUntilReady();
  await queue.enqueue(handoff);
  return { queue, handoff, notices, sent, advanceTo: (to: number) => void (clock = to) };
}

async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('a WhatsApp notice waits for the opening (past a closed date); the webhook goes at once', async () => {
  const { queue, handoff, notices, sent, advanceTo } = await rig(team);
  await eventually(() => sent.some((message) => message.to.startsWith('https://')));
  await eventually(async () => (await queue.queue.getDelayedCount()) === 1);
  expect(sent.map((message) => message.to)).toEqual(['https://hooks.example.test/s']);
  expect(sent[0]?.text).toContain('Out of hours: the customer was told you are back Friday, March 27 at 09:00 (CET)');
  expect(notices.get(`${handoff._id}|${MEMBER}`)?.status).toBe('pending');
  const [held] = await queue.queue.getDelayed();
  // Held for as long as the test's clock says the team is closed: a week, not a retry's backoff.
  expect((held?.delay ?? 0) + (held?.timestamp ?? 0) - Date.now()).toBeGreaterThan(OPENING - FRIDAY_NIGHT - 60_000);

  // The team opens: the held job runs and the notice goes, once.
  advanceTo(OPENING);
  await held?.promote();
  await eventually(() => sent.some((message) => message.to === MEMBER));
  await eventually(() => notices.get(`${handoff._id}|${MEMBER}`)?.status === 'sent');
  expect(sent.filter((message) => message.to === MEMBER)).toHaveLength(1);
  expect(await queue.queue.getDelayedCount()).toBe(0);
});

test('a team with notifyOutOfHours gets its WhatsApp notice at once', async () => {
  const { sent } = await rig({ ...team, notifyOutOfHours: true });
  await eventually(() => sent.length === 2);
  expect(sent.map((message) => message.to).sort()).toEqual(['https://hooks.example.test/s', MEMBER]);
});
