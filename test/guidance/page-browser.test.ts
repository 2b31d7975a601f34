/**
 * The guidance page beside the reports, in Chromium, on the whole service (real FerretDB and
 * Redis): signed out it sends the owner to the reports' sign-in; signed in, the owner adds an
 * entry with the form, publishes it (the live version the page then shows), sees a refusal as a
 * clear alert, rolls back, and removes an entry. axe-core finds nothing in the light and the
 * dark palette; no console message, page error or request off the host.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
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
  await page.keyboard.type(TOKEN);
  await Promise.all([page.waitForURL((url) => url.pathname === '/admin/reports'), page.keyboard.press('Enter')]);
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
