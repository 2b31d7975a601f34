/**
 * The guidance page beside the reports, in Chromium, on the whole service (real FerretDB and
 * Redis): signed out it sends the owner to the reports' sign-in; signed in, the owner adds an
 * entry with the form, publishes it (the live version the page then shows), sees a refusal as a
 * clear alert, rolls back, and removes an entry, and runs the saved simulations against the
 * draft (each criterion's pass or fail with its reason). axe-core finds nothing in the light and
 * the dark palette; no console message, page error or request off the host.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { schemaDefault, type Script } from '../support/deterministic-model.js';
import { launchBrowser, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';

const TOKEN = 'guidance-page-token-0123456789abcdef';

let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  harness = await startHarness({ worker: false, env: { ADMIN_TOKEN: TOKEN } });
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  server = createServer(harness.services.app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  for (const watched of pages) await watched.close();
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await harness?.close();
});

async function axeViolations(page: Page): Promise<string[]> {
  // Through the debugger, not a script tag: the page's CSP allows no script at all.
  await page.evaluate(axe.source);
  const results = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })`,
  )) as { violations: { id: string; nodes: { target: unknown[]; failureSummary?: string }[] }[] };
  return results.violations.flatMap((violation) =>
    violation.nodes.map((node) => `${violation.id}: ${JSON.stringify(node.target)} ${node.failureSummary ?? ''}`),
  );
}

async function signedIn(colorScheme: 'light' | 'dark'): Promise<WatchedPage> {
  const watched = await chromium.newPage(undefined, { colorScheme });
  pages.push(watched);
  const { page } = watched;
  await page.goto(`${origin}/admin/reports/guidance`);
  expect(new URL(page.url()).pathname).toBe('/admin/reports/sign-in');
  // The token field takes the focus by itself (autofocus): typing before it has would type into nothing.
  await page.waitForFunction("document.activeElement?.getAttribute('name') === 'token'");
  await page.keyboard.type(TOKEN);
  // Signed in once the reports' page is on its way (its own load is the reports suites' concern).
  await Promise.all([page.waitForURL((url) => url.pathname === '/admin/reports', { waitUntil: 'commit' }), page.keyboard.press('Enter')]);
  await page.goto(`${origin}/admin/reports/guidance`);
  return watched;
}

test('add, publish, a refusal, roll back and remove, with axe-core clean in both palettes', async () => {
  const watched = await signedIn('light');
  const { page } = watched;
  expect(await page.title()).toBe('Guidance');
  expect(await page.locator('main').innerText()).toContain('Nothing published yet.');
  expect(await axeViolations(page)).toEqual([]);

  await page.getByLabel('Category').selectOption('policy');
  await page.getByLabel(/^Text/).fill('Never promise a delivery date.');
  await page.getByLabel(/^Channels/).fill('whatsapp');
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: 'Add to the draft' }).click()]);
  expect(await page.getByRole('status').innerText()).toMatch(/^Added g_[0-9a-f]{12} to the draft\.$/);
  expect(await page.locator('tbody').innerText()).toContain('Never promise a delivery date.');
  expect(await page.locator('main').innerText()).toContain('The draft has changes not published yet.');

  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: 'Publish the draft' }).click()]);
  expect(await page.getByRole('status').innerText()).toBe('Published version 1.');
  expect(await page.locator('main').innerText()).toContain('Live: version 1, 1 entries');

  // A team on a policy entry: refused with the reason, as an alert, and a 400.
  await page.getByLabel('Category').selectOption('policy');
  await page.getByLabel(/^Text/).fill('Refunds go to support.');
  await page.getByLabel('Hand over to (escalation only)').selectOption('support');
  const [refused] = await Promise.all([
    page.waitForResponse((response) => response.request().method() === 'POST'),
    page.getByRole('button', { name: 'Add to the draft' }).click(),
  ]);
  expect(refused.status()).toBe(400);
  expect(await page.getByRole('alert').innerText()).toContain('only an escalation entry names a team');
  expect(await axeViolations(page)).toEqual([]);

  await page.goto(`${origin}/admin/reports/guidance`);
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: /^Remove entry/ }).click()]);
  expect(await page.getByRole('status').innerText()).toMatch(/^Removed g_/);
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: 'Publish the draft' }).click()]);
  await page.getByLabel('Version to restore').selectOption('1');
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: 'Roll back to it' }).click()]);
  expect(await page.getByRole('status').innerText()).toBe("Published version 3 with version 1's entries.");
  expect(await page.locator('main').innerText()).toContain('Live: version 3, 1 entries');

  const dark = await signedIn('dark');
  expect(await dark.page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(13, 17, 23)');
  expect(await axeViolations(dark.page)).toEqual([]);
  for (const one of [watched, dark]) {
    // The refusal's 400 is the one message the browser logs.
    expect(one.record.console.filter((message) => !message.text.includes('status of 400'))).toEqual([]);
    expect(one.record.pageErrors).toEqual([]);
    expect(one.record.offHostRequests).toEqual([]);
  }
}, 90_000);

test('a request without the session is sent to the sign-in, and a form post changes nothing', async () => {
  const response = await fetch(`${origin}/admin/reports/guidance/publish`, { method: 'POST', redirect: 'manual' });
  expect(response.status).toBe(303);
  expect(response.headers.get('location')).toBe('/admin/reports/sign-in');
  const overview = await fetch(`${origin}/admin/guidance`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(((await overview.json()) as { versions: number[] }).versions).toEqual([1, 2, 3]);
});

/** The simulated customer asks once, then ends; the assistant says what the draft tells it. */
const simulatedTurns: Script = ({ system, userText }) => {
  if (system.includes('You play a customer')) return { text: userText.includes('Customer:') ? 'END' : 'Can I still return the shoes I bought last week?' };
  return { text: system.includes('Returns are accepted within 30 days') ? 'Yes: returns are accepted within 30 days of delivery.' : 'I am not sure, sorry.' };
};
/** Grades "30 days" on the conversation's words and a hand-off as never met (its reason with markup, shown as text). */
const grader: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  if ('verdicts' in json) {
    const criteria = [...call.system.matchAll(/^\d+\. (.*)$/gm)].map((match) => match[1] ?? '');
    const verdicts = criteria.map((criterion) =>
      /30 days/.test(criterion)
        ? { passed: call.userText.includes('within 30 days'), reason: 'The assistant said 30 days.' }
        : { passed: false, reason: 'Nobody handed the conversation to <b>support</b>.' },
    );
    return { text: JSON.stringify({ verdicts }) };
  }
  if ('route' in json) json.route = 'support';
  if ('inScope' in json) json.inScope = true;
  return { text: JSON.stringify(json) };
};

test('"Run simulations" runs the saved scenarios against the draft and shows each criterion with its reason', async () => {
  harness.models.setScript(simulatedTurns);
  harness.models.setJudge(grader);
  const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
  const added = await fetch(`${origin}/admin/guidance/entries`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ category: 'policy', text: 'Returns are accepted within 30 days of delivery.' }),
  });
  expect(added.status).toBe(201);
  // Saved by running once through the API: the page runs each saved scenario's latest form.
  const persona = 'A customer who bought shoes last week and wants to know whether they can still return them.';
  const saved = await fetch(`${origin}/admin/simulations/run`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({
      scenarios: [
        { name: 'return window', channel: 'whatsapp', persona, criteria: ['is told the return window is 30 days'] },
        { name: 'chargeback', channel: 'whatsapp', persona, criteria: ['is told the return window is 30 days', 'is handed to support'] },
      ],
    }),
  });
  expect(saved.status).toBe(200);

  for (const colorScheme of ['light', 'dark'] as const) {
    const watched = await signedIn(colorScheme);
    const { page } = watched;
    await page.getByRole('button', { name: 'Run simulations' }).focus();
    const [ran] = await Promise.all([page.waitForResponse((response) => response.request().method() === 'POST'), page.keyboard.press('Enter')]);
    expect(ran.status()).toBe(200);
    await page.waitForLoadState();
    expect(await page.getByRole('status').innerText()).toBe('1 of 2 scenarios passed against the draft.');
    const section = (name: string) => page.getByRole('region', { name });
    expect(await section('return window: passed').locator('tbody').innerText()).toBe('is told the return window is 30 days\tPass\tThe assistant said 30 days.');
    expect((await section('chargeback: failed').locator('tbody tr').allInnerTexts()).map((row) => row.split('\t'))).toEqual([
      ['is told the return window is 30 days', 'Pass', 'The assistant said 30 days.'],
      ['is handed to support', 'Fail', 'Nobody handed the conversation to <b>support</b>.'],
    ]);
    expect(await axeViolations(page)).toEqual([]);
    expect(watched.record.console).toEqual([]);
    expect(watched.record.pageErrors).toEqual([]);
    expect(watched.record.offHostRequests).toEqual([]);
  }

  // Without the session: sent to the sign-in, and nothing runs.
  const calls = harness.models.calls.length;
  const unsigned = await fetch(`${origin}/admin/reports/guidance/simulations`, { method: 'POST', redirect: 'manual' });
  expect(unsigned.status).toBe(303);
  expect(unsigned.headers.get('location')).toBe('/admin/reports/sign-in');
  expect(harness.models.calls.length).toBe(calls);
}, 90_000);
