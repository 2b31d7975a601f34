/**
 * A question's buttons after a reload, in Chromium: the history carries each message's choices,
 * so the open question's Confirm / Cancel come back tappable and a tap answers it as a live tap
 * does (the write runs once); an answered question's buttons come back disabled, the used one
 * marked pressed, and a question passed over by a typed message is disabled too.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, hostPage, openWidget, startWidgetHost, type WidgetHost } from '../support/widget-page.js';

const SECRET = 'shop-identity-secret-0123456789abcdef';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:reschedule') && toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-05' } }] };
  }
  if (userText.includes('do:cancel') && toolResults.length === 0) return { toolCalls: [{ name: 'order_cancel', input: { orderNumber: '5002' } }] };
  return { text: `Fresh answer to: ${userText.slice(-40)}` };
};

/** Every turn goes to the bookkeeper (its scope admits reversible writes). */
const bookkeeperJudge = judgeRoutingTo('bookkeeper');

let mcp: McpTestServer;
let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: {
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], identitySecret: SECRET, language: 'en' }]),
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
  const ts = String(Math.floor(Date.now() / 1000));
  const hash = createHmac('sha256', SECRET).update(['u-ana', '', '', ts].join('\n')).digest('hex');
  host = await startWidgetHost(port, harness.services.app, {
    '/host': hostPage(origin, `data-site-key="test-site" data-user-id="u-ana" data-user-ts="${ts}" data-user-hash="${hash}"`, 'Orders'),
  });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
  await mcp?.close();
});

test('after a reload the open question is tappable, and a tap answers it like a live one; answered and passed-over questions come back disabled', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    await page.goto(`${host.origin}/host`);
    let parts = await openWidget(page);
    // A question passed over by a typed message.
    await parts.input.fill('do:cancel order 5002');
    await parts.send.click();
    await page.getByRole('group', { name: 'Answers' }).waitFor({ state: 'visible', timeout: 10_000 });
    await parts.input.fill('never mind that');
    await parts.send.click();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())).includes('Fresh answer to'));
    // The open question.
    await parts.input.fill('do:reschedule my delivery please');
    await parts.send.click();
    await eventually(async () => (await page.getByRole('group', { name: 'Answers' }).count()) === 2);

    await page.reload();
    parts = await openWidget(page);
    const groups = page.getByRole('group', { name: 'Answers' });
    await eventually(async () => (await groups.count()) === 2);
    const passedOver = groups.first();
    const open = groups.last();
    expect(await passedOver.getByRole('button', { name: 'Confirm' }).isDisabled()).toBe(true);
    expect(await passedOver.getByRole('button', { name: 'Cancel' }).isDisabled()).toBe(true);
    expect(await passedOver.getByRole('button', { name: 'Cancel' }).evaluate((button) => button.classList.contains('chosen'))).toBe(false);
    const confirm = open.getByRole('button', { name: 'Confirm' });
    expect(await confirm.isDisabled()).toBe(false);
    expect(await open.getByRole('button', { name: 'Cancel' }).isDisabled()).toBe(false);
    expect(mcp.applied).toEqual([]);

    await confirm.click();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())).includes('Outcome:'));
    expect(await bubbleText(parts.assistantBubbles.last())).toContain('The delivery of order 5001 is now on 2026-12-05.');
    expect(await bubbleText(parts.visitorBubbles.last())).toBe('Confirm');
    expect(await confirm.isDisabled()).toBe(true);
    expect(await confirm.evaluate((button) => button.classList.contains('chosen'))).toBe(true);
    expect(mcp.applied.map((write) => write.tool)).toEqual(['order_reschedule_delivery']);

    // Answered: back disabled, the used one marked.
    await page.reload();
    parts = await openWidget(page);
    await eventually(async () => (await groups.count()) === 2);
    const answered = groups.last();
    expect(await answered.getByRole('button', { name: 'Confirm' }).isDisabled()).toBe(true);
    expect(await answered.getByRole('button', { name: 'Cancel' }).isDisabled()).toBe(true);
    expect(await answered.getByRole('button', { name: 'Confirm' }).evaluate((button) => button.classList.contains('chosen'))).toBe(true);
    expect(await groups.first().getByRole('button', { name: 'Confirm' }).isDisabled()).toBe(true);
    expect(mcp.applied.map((write) => write.tool)).toEqual(['order_reschedule_delivery']);
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 90_000);
