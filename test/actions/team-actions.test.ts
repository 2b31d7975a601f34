/**
 * A change only a person may run (an irreversible write the business has not let customers
 * confirm), end to end on WhatsApp with the real MCP test server, Redis, FerretDB, the fake
 * Twilio API and a real browser: the service hands the conversation to the team itself, the
 * notice carries the change, the transcript page shows it where it happened, and a teammate runs
 * it from the page with one click — once, however often they or a colleague click — or declines
 * it; either way the customer is told once, in the service's words. Every refusal (another conversation's change, one the customer must confirm, an unknown
 * id, a second decision) is a 4xx with a log line, and the tool runs 0 or 1 times.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { roster } from '../../roles/index.js';
import { actionKey, ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { DESKTOP, launchBrowser, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script, type ScriptedReply } from '../support/deterministic-model.js';
import { eventually, PUBLIC_BASE_URL, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { findFreePort } from '../support/services.js';
import { turnsSettled } from '../support/settled.js';

const ANA = 'whatsapp:+447700907001';
const BEA = 'whatsapp:+447700907002';
const CLEO = { name: 'Cleo', whatsapp: 'whatsapp:+447700907101' };
const DEV = { name: 'Dev', whatsapp: 'whatsapp:+447700907102' };

type ToolCalls = Extract<ScriptedReply, { toolCalls: unknown }>['toolCalls'];
const PLAYS: Record<string, ToolCalls> = {
  refund: [{ name: 'refund_create', input: { number: '1043', amount: '10.00' } }],
  'refund-es': [{ name: 'refund_create', input: { number: '1043', amount: '10.00', language: 'es' } }],
  cancel: [{ name: 'order_cancel', input: { orderNumber: '5002' } }],
};

const model: Script = ({ userText, toolResults }) => {
  const play = PLAYS[/do:([a-z-]+)/.exec(userText)?.[1] ?? ''];
  if (play && toolResults.length === 0) return { toolCalls: play };
  if (toolResults.length > 0) return { text: `Tools said: ${JSON.stringify(toolResults.map((result) => result.output))}` };
  return { text: `Fresh answer to: ${userText.slice(-60)}` };
};

/** Every turn goes to the bookkeeper (its scope admits reversible writes). */
const bookkeeperJudge = judgeRoutingTo('bookkeeper');

let mcp: McpTestServer;
let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: {
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support', members: [CLEO, DEV] } }),
      NOTICE_BACKOFF_MS: '20',
    },
    // The bookkeeper admits irreversible writes here: the refund is offered, and handed to the team.
    overrides: {
      roles: roster.map((role) =>
        role.id === 'bookkeeper' ? { ...role, toolScope: { ...role.toolScope, effects: [...role.toolScope.effects, 'irreversible'] } } : role,
      ),
    },
  });
  harness.models.setJudge(bookkeeperJudge);
  for (const address of [ANA, BEA]) {
    await harness.services.contacts.upsert({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  }
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  const app = harness.services.app;
  server = createServer((request, response) => {
    if (request.url === '/favicon.ico') response.writeHead(204).end();
    else app(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  for (const watched of pages) await watched.close();
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await harness?.close();
  await mcp?.close();
});

async function say(from: string, body: string): Promise<string> {
  const before = harness.twilio.messages.filter((message) => message.to === from).length;
  await harness.sendWhatsapp({ from, body });
  const replies = await eventually(async () => {
    const to = harness.twilio.messages.filter((message) => message.to === from);
    return to.length > before ? to : undefined;
  });
  return replies.at(-1)?.body ?? '';
}

const seen = new Set<string>();
async function latestAction(from: string, tool: string): Promise<ActionRecord> {
  const found = await eventually(async () => {
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool }).toArray();
    return documents.map((document) => ActionRecordSchema.parse(document)).find((record) => record.proposedBy.address === from && !seen.has(record._id));
  });
  seen.add(found._id);
  return found;
}

async function stored(from: string, actionId: string): Promise<ActionRecord> {
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(from), actionId), 'record');
  if (!raw) throw new Error(`no action ${actionId}`);
  return ActionRecordSchema.parse(JSON.parse(raw));
}

async function recorded(actionId: string, state: string): Promise<ActionRecord> {
  return eventually(async () => {
    const document = await harness.services.mongo.collection(ACTIONS_COLLECTION).findOne({ _id: actionId as never });
    return document && document.state === state ? ActionRecordSchema.parse(document) : undefined;
  });
}

/** The newest notice a teammate got that mentions `text`. */
async function noticeTo(member: string, text: string): Promise<string> {
  const notice = await eventually(async () => harness.twilio.messages.filter((message) => message.to === member && message.body.includes(text)).at(-1));
  return notice.body;
}

/** The page's path and the settings its script posts with. */
async function pageOf(from: string) {
  const link = new URL(harness.services.transcriptLinks.url(conversationKeyFor(from)));
  // The conversation reaches MongoDB through the transcript outbox: the page opens once it is there.
  const response = await eventually(async () => {
    const page = await harness.http.get(`${link.pathname}${link.search}`);
    return page.status === 200 ? page : undefined;
  });
  const config = JSON.parse(/<script type="application\/json" id="live-config">(.*?)<\/script>/s.exec(response.text)?.[1] ?? '{}') as {
    expires: string;
    sig: string;
    csrf: string;
    handoff: { id: string } | null;
  };
  const post = (body: Record<string, unknown>) =>
    harness.http
      .post(`${link.pathname}/actions`)
      .send({ expires: config.expires, sig: config.sig, csrf: config.csrf, handoffId: config.handoff?.id ?? '', ...body });
  return { link, html: response.text, config, post };
}

describe('a change only a teammate may run', () => {
  test('is handed to the team with the change in the notice; a teammate runs it once from the page with one click', async () => {
    const reply = await say(ANA, 'do:refund please refund 10 euros on invoice 1043');
    expect(reply).toContain('waiting for our team');
    expect(reply).not.toContain('Please confirm');
    const proposed = await latestAction(ANA, 'refund_create');
    expect(proposed).toMatchObject({ state: 'proposed', confirmer: 'teammate', args: { number: '1043', amount: '10.00', customerId: 'CUST-ACME' } });

    // The service opened the hand-off itself, and the notice names the change.
    const notice = await noticeTo(CLEO.whatsapp, 'Waiting for your approval');
    expect(notice).toContain('Refund an invoice · Invoice: 1043 · Amount: 10.00 · For: Acme Ltd');
    expect(notice).toContain(`${PUBLIC_BASE_URL}/transcripts/`);
    const handoff = await eventually(async () =>
      (await harness.services.handoffs.activeFor(conversationKeyFor(ANA))).find((candidate) => candidate.actions?.length),
    );
    expect(handoff.actions).toEqual([{ id: proposed._id, title: 'Refund an invoice', summary: proposed.summary }]);
    expect(handoff.team).toBe('support');

    // The teammate opens the notice's link: the change is shown where it happened, with "Run it".
    const url = new URL(/Transcript: (\S+)/.exec(notice)?.[1] ?? '');
    const watched = await chromium.newPage(DESKTOP);
    pages.push(watched);
    const page: Page = watched.page;
    await page.goto(`${origin}${url.pathname}${url.search}`);
    const change = page.locator(`li[data-action-id="${proposed._id}"]`);
    expect(await change.locator('.text').innerText()).toBe('Refund an invoice\n• Invoice: 1043\n• Amount: 10.00\n• For: Acme Ltd');
    expect(await change.locator('.action-state').innerText()).toBe('Waiting for a teammate to run it or decline it.');
    await page.getByLabel('You are').selectOption('Cleo');
    // A double click on "Run it", and a colleague's clicks racing it from other copies of the page.
    const { post } = await pageOf(ANA);
    const [colleagues] = await Promise.all([
      Promise.all([1, 2, 3].map(() => post({ action: 'run_action', actionId: proposed._id, by: 'Dev' }))),
      change.getByRole('button', { name: 'Run it' }).dblclick(),
    ]);
    expect(colleagues.map((response) => response.status)).toEqual([200, 200, 200]);
    await eventually(async () => ((await change.locator('.action-state').innerText()).startsWith('Done') ? true : undefined));
    expect(await change.getByRole('button', { name: 'Run it' }).count()).toBe(0);
    expect(mcp.refunds()).toEqual([{ number: '1043', amount: '10.00' }]);
    expect(mcp.applied.filter((write) => write.tool === 'refund_create')).toEqual([
      { tool: 'refund_create', arguments: { number: '1043', amount: '10.00', customerId: 'CUST-ACME' }, idempotencyKey: proposed._id },
    ]);
    // Called once by the service, not merely deduplicated by the server's idempotency key.
    expect(mcp.calls.filter((call) => call.name === 'refund_create')).toHaveLength(1);
    const done = await recorded(proposed._id, 'done');
    expect(done.confirmedBy?.via).toBe('teammate');
    expect(['Cleo', 'Dev']).toContain(done.confirmedBy?.name);
    expect(done.calls).toBe(1);
    expect(watched.record.pageErrors).toEqual([]);

    // The customer is told, once, in the service's words with the business system's answer.
    const told = "Our team approved your request and it's done: Refund an invoice. Refunded 10.00 EUR on invoice 1043.";
    await eventually(() => harness.twilio.messages.some((message) => message.to === ANA && message.body === told) || undefined);
    await turnsSettled(harness.services);
    expect(harness.twilio.messages.filter((message) => message.to === ANA && message.body === told)).toHaveLength(1);

    // Reloaded, the page says who ran it and offers nothing more.
    await page.reload();
    expect(await change.locator('.action-state').innerText()).toBe(`Done · confirmed by ${done.confirmedBy?.name ?? ''}`);
    expect(await change.locator('button').count()).toBe(0);
    expect(harness.logs.some((line) => line.event === 'transcript-action' && line.action === 'run_action')).toBe(true);
  });

  test('declined from the page it never runs, a late "run" is refused as already decided, and the customer is told in their language', async () => {
    // Asked in Spanish (the model names the customer's language): the team's decision is told in Spanish.
    await say(BEA, 'do:refund-es devuélvanme la factura 1043, por favor');
    const proposed = await latestAction(BEA, 'refund_create');
    await noticeTo(CLEO.whatsapp, proposed.summary.split('\n')[0]?.replace('Please confirm: ', '') ?? 'Refund');
    const { post, html } = await pageOf(BEA);
    expect(html).toContain(`data-decline="${proposed._id}"`);
    const declined = await post({ action: 'decline_action', actionId: proposed._id, by: 'Cleo' });
    expect(declined.status).toBe(200);
    expect(declined.body).toMatchObject({ ok: true, action: { id: proposed._id, state: 'cancelled', stateText: 'Not run: declined by Cleo' } });
    const late = await post({ action: 'run_action', actionId: proposed._id, by: 'Dev' });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'This change was already decided: Not run: declined by Cleo', action: { state: 'cancelled' } });
    expect((await stored(BEA, proposed._id)).state).toBe('cancelled');
    await recorded(proposed._id, 'cancelled');
    expect(mcp.refunds()).toHaveLength(1);
    expect(harness.logs.some((line) => line.event === 'transcript-action-refused' && line.outcome === 'already_decided')).toBe(true);
    const told = 'Nuestro equipo revisó su solicitud (Refund an invoice) y no la llevará a cabo. Responda aquí si tiene alguna pregunta.';
    await eventually(() => harness.twilio.messages.some((message) => message.to === BEA && message.body === told) || undefined);
    await turnsSettled(harness.services);
    expect(harness.twilio.messages.filter((message) => message.to === BEA && message.body === told)).toHaveLength(1);
  });

  test('refuses a change of another conversation, one the customer must confirm, an unknown or malformed id, and a stranger', async () => {
    await say(ANA, 'do:refund once more');
    const anas = await latestAction(ANA, 'refund_create');
    await say(BEA, 'do:cancel order 5002');
    const customers = await latestAction(BEA, 'order_cancel');
    const { post } = await pageOf(BEA);

    const foreign = await post({ action: 'run_action', actionId: anas._id, by: 'Cleo' });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'This change no longer exists' });
    const notTheirs = await post({ action: 'run_action', actionId: customers._id, by: 'Cleo' });
    expect(notTheirs.status).toBe(409);
    expect(notTheirs.body).toEqual({ error: 'Only the customer can confirm this change' });
    const unknown = await post({ action: 'run_action', actionId: '6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5', by: 'Cleo' });
    expect(unknown.status).toBe(404);
    const malformed = await post({ action: 'decline_action', actionId: 'not-an-id', by: 'Cleo' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ error: 'actionId: expected the id of a change' });
    const stranger = await post({ action: 'run_action', actionId: anas._id, by: 'Mallory' });
    expect(stranger.status).toBe(400);

    expect((await stored(ANA, anas._id)).state).toBe('proposed');
    expect((await stored(BEA, customers._id)).state).toBe('proposed');
    expect(mcp.refunds()).toHaveLength(1);
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
    for (const reason of ['unknown_change', 'not_for_team', 'invalid_action_id', 'unknown_teammate']) {
      expect(harness.logs.some((line) => line.event === 'transcript-action-rejected' && line.reason === reason)).toBe(true);
    }
  });
});
