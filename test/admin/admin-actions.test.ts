/**
 * An operator's decision on a change handed to the team (`POST /admin/actions/<id>/run` and
 * `/decline`), against the real test MCP server, Redis and FerretDB: a decision already taken the
 * other way is answered with what it was (409, with the action), never as if it had just been
 * done; asking again for what happened answers it (200); and a run whose outcome the business
 * system did not give (unreachable) is a 503 with a reason and a log line, never a crash.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { roster } from '../../roles/index.js';
import { ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';

const ANA = 'whatsapp:+447700906201';
const ADMIN_TOKEN = 'admin-token-for-the-admin-actions-suite';

/** `do:refund` proposes the refund (irreversible, not opted in: handed to the team). */
const model: Script = ({ userText, toolResults }) => {
  if (/do:refund/.test(userText) && toolResults.length === 0) return { toolCalls: [{ name: 'refund_create', input: { number: '1043', amount: '10.00' } }] };
  return { text: 'Noted.' };
};

let mcp: McpTestServer;
let mcpClosed = false;
let harness: Harness;
beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES, ADMIN_TOKEN },
    overrides: {
      roles: roster.map((role) =>
        role.id === 'bookkeeper' ? { ...role, toolScope: { ...role.toolScope, effects: [...role.toolScope.effects, 'irreversible'] } } : role,
      ),
    },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
});
afterAll(async () => {
  await harness.close();
  if (!mcpClosed) await mcp.close();
});

const seen = new Set<string>();

/** Asks for a refund and returns the change it proposed to the team, once MongoDB has it (the admin API finds it there). */
async function proposedRefund(): Promise<ActionRecord> {
  const before = harness.twilio.messages.length;
  await harness.sendWhatsapp({ from: ANA, body: 'do:refund please' });
  await harness.twilio.waitForMessages(before + 1, 10_000);
  const found = await eventually(async () => {
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool: 'refund_create' }).toArray();
    return documents.map((document) => ActionRecordSchema.parse(document)).find((record) => !seen.has(record._id));
  });
  seen.add(found._id);
  expect(found).toMatchObject({ state: 'proposed', confirmer: 'teammate' });
  return found;
}

const decide = (id: string, what: 'run' | 'decline') =>
  harness.http.post(`/admin/actions/${id}/${what}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'Marta' });

describe('a decision already taken', () => {
  test('declining a change already run is refused (409) with what it is; running it again answers what it did', async () => {
    const proposed = await proposedRefund();
    expect((await decide(proposed._id, 'run')).status).toBe(200);
    const declined = await decide(proposed._id, 'decline');
    expect(declined.status).toBe(409);
    expect(declined.body).toMatchObject({ error: expect.stringContaining('already') as unknown, action: { state: 'done' } });
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'admin-request-rejected', status: 409, reason: 'already_decided' }));
    const again = await decide(proposed._id, 'run');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ action: { state: 'done' } });
    expect(mcp.refunds()).toEqual([{ number: '1043', amount: '10.00' }]);
  });

  test('running a change already declined is refused (409); declining it again answers what it is', async () => {
    const proposed = await proposedRefund();
    expect((await decide(proposed._id, 'decline')).body).toMatchObject({ action: { state: 'cancelled' } });
    const late = await decide(proposed._id, 'run');
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ action: { state: 'cancelled' } });
    expect((await decide(proposed._id, 'decline')).status).toBe(200);
    expect(mcp.refunds()).toHaveLength(1);
  });
});

describe('an outcome the business system did not give', () => {
  test('a run while the MCP server is unreachable is a 503 with a reason and a log line', async () => {
    const proposed = await proposedRefund();
    await mcp.close();
    mcpClosed = true;
    const response = await decide(proposed._id, 'run');
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ error: expect.stringContaining('business system') as unknown });
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'admin-action-unresolved', actionId: proposed._id }));
  });
});
