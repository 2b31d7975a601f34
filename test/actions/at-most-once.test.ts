/**
 * A confirmed change runs at most once whatever fails after it, and no message is lost around
 * a tap (WhatsApp end to end: signed webhook → worker → the real test MCP server → fake Twilio;
 * Redis and FerretDB real). The moments after a change ran: the model failing on its outcome,
 * the same change proposed again the same day. Taps inside a burst: decided on their own, the
 * other messages answered too. A tap with nothing pending, two writes in one model turn, a
 * confirmation nobody answers, and two callers racing for one run.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { actionKey, ActionRecordSchema, createActionStore, type ActionRecord } from '../../src/actions/action-store.js';
import { ActionOutcomePendingError, createActionRunner } from '../../src/actions/action-runner.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { roster } from '../../roles/index.js';
import type { McpWriteTool } from '../../src/tools/mcp-tool-source.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';

const ANA = 'whatsapp:+447700908001';
const BEA = 'whatsapp:+447700908002';
const CARL = 'whatsapp:+447700908003';
const DORA = 'whatsapp:+447700908004';
const EVA = 'whatsapp:+447700908005';

const RESCHEDULE = { name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-09' } };
const SLOW_MS = 1500;

/** The model's failure on the next outcome it is told (an outage of every provider on the reply). */
let failOutcome = false;

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) {
    if (failOutcome) return { error: Object.assign(new Error('The model refused the request'), { statusCode: 400 }) };
    return { text: `Outcome: ${outcome}${system.includes('also wrote') ? ' (and the rest)' : ''}` };
  }
  if (toolResults.length > 0) return { text: `Tools said: ${JSON.stringify(toolResults.map((result) => result.output))}` };
  if (userText.includes('do:reschedule')) return { toolCalls: [RESCHEDULE] };
  if (userText.includes('do:two')) return { toolCalls: [RESCHEDULE, { name: 'order_cancel', input: { orderNumber: '5002' } }] };
  // A question a burst's tap sits beside: slow, so the tap arrives while it runs.
  if (userText.includes('slow:')) return { text: `Fresh answer to: ${userText}`, delayMs: SLOW_MS };
  return { text: `Fresh answer to: ${userText}` };
};

let mcp: McpTestServer;
let harness: Harness;
beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: {
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      // A burst: messages within 2 s of each other are one batch.
      COALESCE_MS: '2000',
      // Short for the expiry test, long enough that a loaded machine answers a tap in time.
      ACTION_CONFIRM_TTL_SECONDS: '12',
      MESSAGE_RETRY_BACKOFF_MS: '100',
    },
    // The sweeper's wait for an answer that arrived in time, short for the expiry test.
    overrides: { roles: roster, actionSweepMs: 300, actionAnswerGraceMs: 1000 },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  for (const address of [ANA, BEA, CARL, DORA, EVA]) {
    await harness.services.contacts.upsert({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  }
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});
beforeEach(() => {
  failOutcome = false;
});

const bodiesTo = (to: string) => harness.twilio.messages.filter((message) => message.to === to).map((message) => message.body);

/** Sends a message (or a tap) and waits until `to` has `count` replies; returns them. */
async function say(from: string, body: string, options: { button?: string; replies?: number } = {}): Promise<string[]> {
  const before = bodiesTo(from).length;
  await send(from, body, options.button);
  return eventually(async () => {
    const bodies = bodiesTo(from);
    return bodies.length >= before + (options.replies ?? 1) ? bodies.slice(before) : undefined;
  }, 20_000);
}

async function send(from: string, body: string, button?: string): Promise<void> {
  const response = await harness.sendWhatsapp({ from, body, messageSid: newMessageSid(), ...(button ? { button: { text: body, payload: button } } : {}) });
  expect(response.status).toBe(200);
}

/** Proposes the reschedule for `from` and returns the confirmation's Confirm payload. */
async function propose(from: string): Promise<{ question: string; confirm: string; actionId: string }> {
  const before = harness.twilio.messages.length;
  await send(from, 'do:reschedule please');
  const message = await eventually(async () => harness.twilio.messages.slice(before).find((sent) => sent.to === from), 20_000);
  const confirm = message.choices?.[0]?.id ?? '';
  expect(confirm).toMatch(/^act:.+:confirm$/);
  return { question: message.body, confirm, actionId: confirm.split(':')[1]! };
}

async function stored(from: string, actionId: string): Promise<ActionRecord | undefined> {
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(from), actionId), 'record');
  return raw ? ActionRecordSchema.parse(JSON.parse(raw)) : undefined;
}

const reschedules = () => mcp.calls.filter((call) => call.name === 'order_reschedule_delivery');

test('a model failing on the outcome: the customer is told in the service words, the change ran once, and asking again says it was done', async () => {
  const { actionId, confirm } = await propose(ANA);
  const callsBefore = reschedules().length;
  failOutcome = true;
  const [outcome] = await say(ANA, 'Confirm', { button: confirm });
  expect(outcome).toBe('Done: Reschedule a delivery. The delivery of order 5001 is now on 2026-12-09.');
  expect((await stored(ANA, actionId))?.state).toBe('done');
  failOutcome = false;

  // A later "yes" is a new turn (the question is over), never the old confirmation resumed again.
  const [fresh] = await say(ANA, 'yes');
  expect(fresh).toBe('Fresh answer to: yes');
  // The same change again today is asked about as such.
  const again = await propose(ANA);
  expect(again.question).toMatch(/^You already did this today at \d\d:\d\d UTC\. Do it again\?\n\nPlease confirm: Reschedule a delivery/);
  expect(reschedules().length - callsBefore).toBe(1);
  expect(bodiesTo(ANA).filter((body) => body.startsWith('Done:') || body.startsWith('Outcome:'))).toHaveLength(1);
});

test('a burst ending in a stale tap: the tap is refused in the service words and the question before it is answered', async () => {
  const { actionId, confirm } = await propose(BEA);
  await say(BEA, 'Confirm', { button: confirm });
  expect((await stored(BEA, actionId))?.state).toBe('done');
  const refusals = harness.services.metrics.value('action_refusals_total', { reason: 'stale', channel: 'whatsapp' }) ?? 0;

  await send(BEA, 'slow: what do I owe this month?');
  const [reply] = await say(BEA, 'Confirm', { button: confirm });
  expect(reply).toMatch(/^That change was already made at \d\d:\d\d UTC: Reschedule a delivery\. Nothing else was changed\.\n\nFresh answer to: /);
  expect(reply).toContain('what do I owe this month?');
  expect(bodiesTo(BEA).filter((body) => body.includes('what do I owe'))).toHaveLength(1);
  expect(harness.services.metrics.value('action_refusals_total', { reason: 'stale', channel: 'whatsapp' })).toBe(refusals + 1);
  expect(reschedules().filter((call) => call.meta?.['wa-assistant/idempotency-key'] === actionId)).toHaveLength(1);
});

test('a tap on a forged confirmation with nothing pending is refused in the service words, never read by the model', async () => {
  const [reply] = await say(CARL, 'Confirm', { button: 'act:00000000-0000-4000-8000-000000000000:confirm' });
  expect(reply).toBe("That confirmation isn't valid for this request, so nothing was changed.");
});

test('Confirm and "thanks!" in one burst: the change runs once and both are answered', async () => {
  const { actionId, confirm } = await propose(DORA);
  await send(DORA, 'Confirm', confirm);
  const [reply] = await say(DORA, 'thanks!');
  expect(reply).toContain('Outcome: {"status":"done"');
  expect(reply).toContain('(and the rest)');
  expect((await stored(DORA, actionId))?.state).toBe('done');
  expect(reschedules().filter((call) => call.meta?.['wa-assistant/idempotency-key'] === actionId)).toHaveLength(1);
});

test('two writes in one model turn: one is proposed and shown, the other refused to the model', async () => {
  const before = harness.twilio.messages.length;
  await send(EVA, 'do:two changes');
  const message = await eventually(async () => harness.twilio.messages.slice(before).find((sent) => sent.to === EVA), 20_000);
  // Whichever the model's step ran first (the SDK runs a step's calls at once): one, shown; the other never stored.
  const shown = /^Please confirm: (Reschedule a delivery|Cancel an order)\n/.exec(message.body)?.[1];
  expect(shown).toBeDefined();
  const actions = await harness.services.redis.zrange(`asst:actions:{${conversationKeyFor(EVA)}}`, '0', '-1');
  expect(actions).toHaveLength(1);
  expect((await stored(EVA, actions[0]!))?.title).toBe(shown);
  expect(message.choices?.[0]?.id).toBe(`act:${actions[0]}:confirm`);
});

test('an unanswered confirmation is expired on time, counted, without the customer writing again', async () => {
  const before = harness.services.metrics.value('actions_total', { tool: 'order_reschedule_delivery', outcome: 'expired' }) ?? 0;
  const from = 'whatsapp:+447700908006';
  await harness.services.contacts.upsert({ address: from, name: 'Fay', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  const { actionId } = await propose(from);
  await eventually(async () => ((await stored(from, actionId))?.state === 'expired' ? true : undefined), 40_000);
  expect((await stored(from, actionId))?.reason).toBe('no answer in time');
  // The customer's next message is answered as such, not with the expired confirmation.
  expect(await say(from, 'what are your opening hours?')).toEqual(['Fresh answer to: what are your opening hours?']);
  expect(harness.services.metrics.value('actions_total', { tool: 'order_reschedule_delivery', outcome: 'expired' })).toBeGreaterThan(before);
}, 90_000);

test('two callers racing for one run after its lease: one call; within the lease: none', async () => {
  const redis = harness.services.redis;
  const appended: unknown[] = [];
  const store = createActionStore(redis, { append: async (records) => void appended.push(...records) });
  let calls = 0;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const source = {
    writeTools: () => [{ name: 'order_reschedule_delivery' } as McpWriteTool],
    callWrite: async () => {
      calls += 1;
      await held;
      return 'ok';
    },
  };
  let clock = Date.parse('2026-12-02T10:00:00Z');
  const runner = createActionRunner({
    store,
    source,
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
    now: () => clock,
  });
  const conversation = 'whatsapp:+447700908099';
  const record: ActionRecord = {
    _id: 'race-1',
    conversationId: conversation,
    channel: 'whatsapp',
    tool: 'order_reschedule_delivery',
    title: 'Reschedule a delivery',
    effect: 'reversible',
    args: { orderNumber: '5001', date: '2026-12-10' },
    summary: 'Please confirm: Reschedule a delivery',
    state: 'proposed',
    proposedBy: { address: conversation, customerId: 'CUST-ACME', roleId: 'bookkeeper', runId: 'run-1' },
    calls: 0,
    createdAt: new Date(clock).toISOString(),
    expiresAt: new Date(clock + 600_000).toISOString(),
    updatedAt: new Date(clock).toISOString(),
  };
  await store.create(conversation, record);
  const running = {
    ...record,
    state: 'running' as const,
    calls: 1,
    updatedAt: new Date(clock).toISOString(),
    leaseUntil: new Date(clock + 16_000).toISOString(),
  };
  await store.transition(conversation, ['proposed'], running);
  const context = { caller: { kind: 'contact' as const, name: 'Ana', customerId: 'CUST-ACME', entities: [] }, signal: new AbortController().signal };

  // Within its lease (its attempt may still be calling): nobody calls.
  await expect(runner.run(running, context)).rejects.toBeInstanceOf(ActionOutcomePendingError);
  expect(calls).toBe(0);

  // After it: two callers at once, one call.
  clock += 20_000;
  const first = runner.run(running, context);
  const second = runner.run(running, context);
  await expect(second).rejects.toBeInstanceOf(ActionOutcomePendingError);
  release();
  expect((await first)?.state).toBe('done');
  expect(calls).toBe(1);
});
