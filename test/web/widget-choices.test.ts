/**
 * Choices in the widget, in Chromium: a verified visitor asks for a change, the assistant's
 * confirmation comes with Confirm / Cancel buttons under it (a labelled group, reachable by
 * keyboard), pressing one sends it as the visitor's answer, and the buttons are disabled from
 * then on. Confirm runs the write once on the real MCP test server; Cancel runs nothing. Another
 * visitor posting the same choice id gets nowhere. A write's enum argument left out is asked with
 * its values as buttons first; the service's words follow the widget's language.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { ActionRecordSchema } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, openWidget } from '../support/widget-page.js';

const SECRET = 'shop-identity-secret-0123456789abcdef';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:reschedule') && toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-05' } }] };
  }
  if (userText.includes('do:cancel') && toolResults.length === 0) return { toolCalls: [{ name: 'order_cancel', input: { orderNumber: '5002' } }] };
  if (userText.includes('do:slot') && toolResults.length === 0) return { toolCalls: [{ name: 'order_set_delivery_slot', input: { orderNumber: '5001' } }] };
  if (userText.includes('do:link') && toolResults.length === 0) return { toolCalls: [{ name: 'invoice_create_payment_link', input: { number: '1042' } }] };
  return { text: `Fresh answer to: ${userText.slice(-40)}` };
};

/** Every turn goes to the bookkeeper (its scope admits reversible writes). */
const bookkeeperJudge = judgeRoutingTo('bookkeeper');

let mcp: McpTestServer;
let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: {
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      WEB_SITES: JSON.stringify([
        { key: 'test-site', name: 'Harbour Lane', origins: [origin], identitySecret: SECRET, language: 'en' },
        // No language of its own: the widget's (the visitor's browser's) decides.
        { key: 'browser-language-site', name: 'Harbour Lane', origins: [origin], identitySecret: SECRET },
      ]),
    },
  });
  harness.models.setJudge(bookkeeperJudge);
  await harness.services.contacts.upsert({
    address: 'user:u-ana',
    name: 'Ana Pérez',
    externalId: 'u-ana',
    customerId: 'CUST-ACME',
    entities: [{ id: 'HL-2001', name: 'Acme Ltd' }],
  });
  // The site signs its user with the issue time (docs/widget.md, "Verified website visitors").
  const ts = String(Math.floor(Date.now() / 1000));
  const hash = createHmac('sha256', SECRET).update(['u-ana', '', '', ts].join('\n')).digest('hex');
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Orders</title></head><body><main><h1>Your orders</h1></main>
<script src="${origin}/widget.js" data-site-key="test-site" data-user-id="u-ana" data-user-ts="${ts}" data-user-hash="${hash}" async></script></body></html>`;
  const app = harness.services.app;
  server = createServer((request, response) => {
    if (request.url === '/host') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    else app(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await harness?.close();
  await mcp?.close();
});

test('a confirmation shows Confirm and Cancel buttons; pressing Confirm (by keyboard) runs it once and disables them', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    await page.goto(`${origin}/host`);
    const parts = await openWidget(page);
    await parts.input.fill('do:reschedule my delivery please');
    await parts.send.click();
    const answers = page.getByRole('group', { name: 'Answers' });
    await answers.waitFor({ state: 'visible', timeout: 10_000 });
    const question = await bubbleText(parts.assistantBubbles.last());
    expect(question).toContain('Please confirm: Reschedule a delivery');
    expect(question).toContain('New delivery date: 2026-12-05');
    const confirm = answers.getByRole('button', { name: 'Confirm' });
    const cancel = answers.getByRole('button', { name: 'Cancel' });
    expect(mcp.applied).toEqual([]);
    await confirm.focus();
    await page.keyboard.press('Enter');
    await eventually(async () => (await parts.assistantBubbles.count()) >= 2 && (await bubbleText(parts.assistantBubbles.last())).includes('Outcome:'));
    expect(await bubbleText(parts.assistantBubbles.last())).toContain('The delivery of order 5001 is now on 2026-12-05.');
    expect(await confirm.isDisabled()).toBe(true);
    expect(await cancel.isDisabled()).toBe(true);
    expect(await confirm.evaluate((button) => button.classList.contains('chosen'))).toBe(true);
    // The visitor's answer shows as their message, with the button's label.
    expect(await bubbleText(parts.visitorBubbles.last())).toBe('Confirm');
    expect(mcp.applied.map((write) => write.tool)).toEqual(['order_reschedule_delivery']);
    expect(mcp.orders().find((order) => order.number === '5001')?.deliveryDate).toBe('2026-12-05');

    // A second confirmation, answered by Cancel: nothing runs.
    await parts.input.fill('do:cancel order 5002');
    await parts.send.click();
    const second = page.getByRole('group', { name: 'Answers' }).last();
    await eventually(async () => !(await second.getByRole('button', { name: 'Cancel' }).isDisabled()));
    await second.getByRole('button', { name: 'Cancel' }).click();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())).includes('cancelled'));
    expect(mcp.applied.map((write) => write.tool)).toEqual(['order_reschedule_delivery']);
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 60_000);

test("another visitor posting the choice id of Ana's confirmation gets nowhere", async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    await page.goto(`${origin}/host`);
    const parts = await openWidget(page);
    await parts.input.fill('do:cancel order 5002');
    await parts.send.click();
    await page.getByRole('group', { name: 'Answers' }).waitFor({ state: 'visible', timeout: 10_000 });
    const choiceId = await page.getByRole('group', { name: 'Answers' }).getByRole('button', { name: 'Confirm' }).getAttribute('data-choice');
    expect(choiceId).toMatch(/^act:/);
    // An anonymous visitor of the same site sends the same payload.
    const started = await harness.http.post('/api/widget/session').set('Origin', origin).send({ siteKey: 'test-site' });
    const token = (started.body as { token: string }).token;
    const before = harness.models.replyCalls().length;
    const refused = () => harness.services.metrics.value('action_refusals_total', { reason: 'stale', channel: 'web' }) ?? 0;
    const refusedBefore = refused();
    const posted = await harness.http
      .post('/api/widget/messages')
      .set('Origin', origin)
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: 'stranger-tap-1', text: 'Confirm', choice: choiceId });
    expect(posted.status).toBe(202);
    // Nothing is pending in the stranger's conversation: refused in the service's words, never read by the model.
    await eventually(() => refused() > refusedBefore);
    expect(harness.models.replyCalls().length).toBe(before);
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
    expect(mcp.orders().find((order) => order.number === '5002')?.status).toBe('open');
  } finally {
    await watched.close();
  }
}, 60_000);

test('a missing enum argument is asked with its values as buttons; pressing one leads to the confirmation, and Confirm runs it with that value', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    // The widget says which language it speaks with each message.
    const sent: unknown[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/widget/messages')) sent.push(request.postDataJSON());
    });
    await page.goto(`${origin}/host`);
    const parts = await openWidget(page);
    await parts.input.fill('do:slot for order 5001');
    await parts.send.click();
    const answers = page.getByRole('group', { name: 'Answers' }).last();
    await answers.getByRole('button', { name: 'evening' }).waitFor({ state: 'visible', timeout: 10_000 });
    expect(await bubbleText(parts.assistantBubbles.last())).toContain('please choose: Delivery slot');
    expect(await answers.getByRole('button').allTextContents()).toEqual(['morning', 'afternoon', 'evening']);
    await answers.getByRole('button', { name: 'evening' }).click();
    const confirmation = page.getByRole('group', { name: 'Answers' }).last();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())).includes('Please confirm: Set a delivery slot'));
    expect(await bubbleText(parts.assistantBubbles.last())).toContain('Delivery slot: evening');
    await eventually(async () => !(await confirmation.getByRole('button', { name: 'Confirm' }).isDisabled()));
    await confirmation.getByRole('button', { name: 'Confirm' }).click();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())).includes('Outcome:'));
    expect(mcp.applied.filter((write) => write.tool === 'order_set_delivery_slot').map((write) => write.arguments)).toEqual([
      { orderNumber: '5001', slot: 'evening', customerId: 'CUST-ACME' },
    ]);
    expect(sent[0]).toMatchObject({ text: 'do:slot for order 5001', language: 'en' });
    expect(sent[1]).toMatchObject({ text: 'evening', choice: expect.stringMatching(/^arg:/), language: 'en' });
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 60_000);

test("the widget's language (the site sets none) is the confirmation's when the model names none", async () => {
  const ts = String(Math.floor(Date.now() / 1000));
  const hash = createHmac('sha256', SECRET).update(['u-ana', '', '', ts].join('\n')).digest('hex');
  const started = await harness.http
    .post('/api/widget/session')
    .set('Origin', origin)
    .send({ siteKey: 'browser-language-site', user: { id: 'u-ana', ts, hash } });
  expect(started.status).toBe(200);
  const token = (started.body as { token: string }).token;
  const posted = await harness.http
    .post('/api/widget/messages')
    .set('Origin', origin)
    .set('Authorization', `Bearer ${token}`)
    .send({ clientMessageId: 'french-link-1', text: 'do:link facture 1042', language: 'fr' });
  expect(posted.status).toBe(202);
  const proposed = await eventually(async () => {
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool: 'invoice_create_payment_link' }).toArray();
    return documents.map((document) => ActionRecordSchema.parse(document)).at(0);
  });
  expect(proposed.summary).toContain('Veuillez confirmer : Create a payment link');
  expect(proposed.summary).toContain('• Pour : Acme Ltd');
});
