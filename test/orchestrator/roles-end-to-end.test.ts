/**
 * The three roles through the whole flow, on the real `@ai-sdk/openai` path (a local
 * OpenAI-compatible server) with the business's data from a real MCP server: on WhatsApp
 * (signed webhook → reply through Twilio's library) and in the terminal (`npm run chat`).
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { stateKeys } from '../../src/orchestrator/state/keys.js';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { eventually, startHarness, testEnv, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { stubAssistant } from '../support/stub-assistant.js';
import { RUN_TS } from '../support/run-ts.js';

const WRITE_TOOLS = ['invoice_issue_refund', 'account_update_email', 'plan_change'];

let stub: OpenAIStub;
let mcp: McpTestServer;
beforeAll(async () => {
  stub = await startOpenAIStub();
  stub.respondWith(stubAssistant);
  mcp = await startMcpServer();
});
afterAll(async () => {
  await stub.close();
  await mcp.close();
});

describe('on WhatsApp', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({
      useConfiguredModel: true,
      env: { OPENAI_BASE_URL: stub.baseUrl, MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES },
    });
    // Invoices are customer data: only a number linked to the customer reads them.
    await harness.services.contacts.upsert({
      address: 'whatsapp:+447700901001',
      name: 'Ana Pérez',
      customerId: 'CUST-ACME',
      entities: [{ id: 'HL-2001', name: 'Acme Ltd' }],
    });
  });
  afterAll(() => harness.close());

  test.each([
    ['whatsapp:+447700901001', 'where is my invoice 1042?', 'bookkeeper', /1250\.00.*EUR.*overdue/],
    ['whatsapp:+447700901002', 'how much is the Pro plan?', 'sales', /Pro: 49 EUR\/month/],
    ['whatsapp:+447700901003', "the app won't let me log in", 'support', /Resetting your password/],
  ])('%s asks "%s" and %s answers with the business\'s data', async (from, body, role, expected) => {
    harness.twilio.reset();
    await harness.sendWhatsapp({ from, body });
    const [reply] = await harness.twilio.waitForMessages(1, 10_000);
    expect(reply?.body).toMatch(expected);
    const stored = await eventually(async () =>
      (await harness.services.transcripts.conversationMessages(conversationKeyFor(from))).find((message) => message.direction === 'outbound'),
    );
    expect(stored.roleId).toBe(role);
    expect(await harness.services.redis.get(stateKeys.activeRole(conversationKeyFor(from)))).toBe(role);
  });

  test("evidence from the invoice lookup is remembered as the bookkeeper's facts", async () => {
    const raw = await eventually(() =>
      harness.services.redis.get(stateKeys.facts(conversationKeyFor('whatsapp:+447700901001'), 'bookkeeper')).then((value) => value ?? undefined),
    );
    expect(JSON.parse(raw).f).toMatchObject({ invoice_number: '1042', invoice_status: 'overdue' });
  });

  test('no write tool is ever offered to the model or called on the MCP server', () => {
    const offered = stub.requests.flatMap((request) => (request.body.tools ?? []).map((tool) => tool.function.name));
    expect(offered).toEqual(expect.arrayContaining(['invoice_get', 'plan_get_pricing', 'help_search_articles']));
    for (const name of WRITE_TOOLS) expect(offered).not.toContain(name);
    expect(mcp.calls.map((call) => call.name).filter((name) => WRITE_TOOLS.includes(name))).toEqual([]);
    expect(stub.requests.every((request) => (request.body.tools ?? []).length <= 20)).toBe(true);
  });

  test('the customer\'s "reset" clears the conversation\'s state and history', async () => {
    const from = 'whatsapp:+447700901002';
    harness.twilio.reset();
    await harness.sendWhatsapp({ from, body: 'reset' });
    const [reply] = await harness.twilio.waitForMessages(1);
    expect(reply?.body).toBe('Done — we are starting a new conversation. How can I help?');
    expect(await harness.services.redis.exists(stateKeys.activeRole(conversationKeyFor(from)))).toBe(0);
    const recent = await harness.services.transcripts.recent(conversationKeyFor(from));
    expect(recent.map((message) => message.text)).toEqual([reply?.body]);
  });
});

describe('in the terminal', () => {
  test('npm run chat answers through the same orchestrator and shows the last decision', async () => {
    const env = testEnv('http://127.0.0.1:9', {
      OPENAI_BASE_URL: stub.baseUrl,
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      USER: `dev${Date.now()}`,
    });
    const child = spawn(process.execPath, [...RUN_TS, 'src/chat.ts'], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const say = async (line: string, waitFor: RegExp) => {
      child.stdin.write(`${line}\n`);
      await eventually(() => waitFor.test(output), 30_000).catch((error: unknown) => {
        throw new Error(`${String(error)}; the terminal showed:\n${output}`);
      });
    };
    try {
      await eventually(() => output.includes('you ›'), 20_000);
      await say('how much is the Pro plan?', /assistant › From our records: .*Pro: 49 EUR\/month/s);
      await say('/decision', /"roleId": "sales"/);
      expect(output).toMatch(/"offeredTools": \[\s*"plan_get_pricing"\s*\]/);
      await say('/reset', /starting a new conversation/);
      child.stdin.write('/quit\n');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);
});
