/**
 * ACTION_TOOLS_TEAM_APPROVAL: writes the business always has a teammate approve, reversible or
 * irreversible, with the shipped roles (no role is widened here). The customer asks for the
 * change; they get no confirmation buttons and their "yes" runs nothing; the team gets the
 * hand-off notice carrying the change; `POST /admin/actions/<id>/run` runs it once on the MCP
 * server. An irreversible write listed there reaches the role admitting reversible writes in its
 * category (the bookkeeper), which no shipped role would otherwise be offered. Real MCP server,
 * Redis, FerretDB and fake Twilio.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script, type ScriptedReply } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { turnsSettled } from '../support/settled.js';

const ANA = 'whatsapp:+447700909001';
const BEA = 'whatsapp:+447700909002';
const CLEO = { name: 'Cleo', whatsapp: 'whatsapp:+447700909101' };
const ADMIN_TOKEN = 'admin-token-for-the-team-approval-suite';

type ToolCalls = Extract<ScriptedReply, { toolCalls: unknown }>['toolCalls'];
const PLAYS: Record<string, ToolCalls> = {
  cancel: [{ name: 'order_cancel', input: { orderNumber: '5002' } }],
  refund: [{ name: 'refund_create', input: { number: '1043', amount: '10.00' } }],
};

const model: Script = ({ userText, toolResults }) => {
  const play = PLAYS[/do:([a-z-]+)/.exec(userText)?.[1] ?? ''];
  if (play && toolResults.length === 0) return { toolCalls: play };
  if (toolResults.length > 0) return { text: `Tools said: ${JSON.stringify(toolResults.map((result) => result.output))}` };
  return { text: `Fresh answer to: ${userText.slice(-60)}` };
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
      ADMIN_TOKEN,
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support', members: [CLEO] } }),
      NOTICE_BACKOFF_MS: '20',
      // A reversible write and an irreversible one.
      ACTION_TOOLS_TEAM_APPROVAL: 'order_cancel,refund_create',
    },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  for (const address of [ANA, BEA]) {
    await harness.services.contacts.upsert({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  }
});

afterAll(async () => {
  await harness?.close();
  await mcp?.close();
});

/** Sends a message and returns what the customer got back. */
async function say(from: string, body: string) {
  const before = harness.twilio.messages.filter((message) => message.to === from).length;
  await harness.sendWhatsapp({ from, body });
  const replies = await eventually(() => {
    const to = harness.twilio.messages.filter((message) => message.to === from);
    return to.length > before ? to : undefined;
  });
  const reply = replies.at(-1);
  if (!reply) throw new Error('no reply');
  return reply;
}

async function proposed(from: string, tool: string): Promise<ActionRecord> {
  return eventually(async () => {
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool }).toArray();
    return documents.map((document) => ActionRecordSchema.parse(document)).find((record) => record.proposedBy.address === from);
  });
}

const run = (actionId: string) => harness.http.post(`/admin/actions/${actionId}/run`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'Marta' });

describe('ACTION_TOOLS_TEAM_APPROVAL', () => {
  test('a reversible write listed there goes to the team, not to the customer, and an operator runs it once', async () => {
    const reply = await say(ANA, 'do:cancel please cancel order 5002');
    // No confirmation for the customer: no buttons, no "Please confirm".
    expect(reply.contentSid).toBeUndefined();
    expect(reply.choices).toBeUndefined();
    expect(reply.body).not.toContain('Please confirm');
    expect(reply.body).toContain('waiting for our team');
    const action = await proposed(ANA, 'order_cancel');
    expect(action).toMatchObject({ state: 'proposed', confirmer: 'teammate', effect: 'reversible', args: { orderNumber: '5002', customerId: 'CUST-ACME' } });
    expect(harness.services.metrics.value('actions_total', { tool: 'order_cancel', outcome: 'handed_off' })).toBe(1);

    // The team is told, with the change.
    const notice = await eventually(() =>
      harness.twilio.messages.find((message) => message.to === CLEO.whatsapp && message.body.includes('Waiting for your approval')),
    );
    expect(notice.body).toContain('Cancel an order');
    expect(notice.body).toContain('5002');

    // The customer's "yes" runs nothing.
    await say(ANA, 'yes');
    await turnsSettled(harness.services);
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);

    // An operator runs it: once, however often asked.
    const first = await run(action._id);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ action: { state: 'done', confirmedBy: { via: 'teammate', name: 'admin:Marta' } } });
    expect((await run(action._id)).status).toBe(200);
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([
      { tool: 'order_cancel', arguments: { orderNumber: '5002', customerId: 'CUST-ACME' }, idempotencyKey: action._id },
    ]);
    expect(mcp.calls.filter((call) => call.name === 'order_cancel')).toHaveLength(1);
    expect(mcp.orders().find((order) => order.number === '5002')?.status).toBe('cancelled');
  });

  test('an irreversible write listed there reaches the shipped bookkeeper and is handed to the team', async () => {
    const reply = await say(BEA, 'do:refund please refund 10 euros on invoice 1043');
    expect(harness.models.replyCalls().some((call) => call.toolNames.includes('refund_create'))).toBe(true);
    expect(reply.contentSid).toBeUndefined();
    expect(reply.body).toContain('waiting for our team');
    const action = await proposed(BEA, 'refund_create');
    expect(action).toMatchObject({ state: 'proposed', confirmer: 'teammate', effect: 'irreversible' });
    expect((await run(action._id)).body).toMatchObject({ action: { state: 'done' } });
    expect(mcp.refunds()).toEqual([{ number: '1043', amount: '10.00' }]);
  });
});
