/**
 * The reports page in Chromium, over seeded roll-ups on real FerretDB and Redis: an owner signs
 * in with the keyboard alone (the token form, then Enter), sees the figures and the SVG charts,
 * changes the range and channel with the keyboard, downloads a table's CSV through its link (the
 * session cookie, no token in a URL), and the page is dark under `prefers-color-scheme: dark`.
 * No console message, no page error, no request off the host; the CSP is the page's, and its one
 * style sheet applies (its hash matches). At 390 px in both palettes, the grouping is changed by
 * keyboard (one bar per week, the weeks not yet settled marked), a hand-off waiting now is opened
 * through its link by keyboard, and axe-core finds nothing.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import axe from 'axe-core';
import express from 'express';
import { createCsatStore } from '../../src/csat/csat-store.js';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { createHandoffStore } from '../../src/handoff/handoff-store.js';
import { createSatisfaction } from '../../src/reports/satisfaction.js';
import { DESKTOP, launchBrowser, MOBILE, saveScreenshot, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';

const TOKEN = 'reports-browser-token-0123456789abcdef';
const TODAY = '2026-11-30';

let harness: Harness;
let reports: ReportsFeature;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: TOKEN, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp', 'web'], prices: undefined },
    csat: createSatisfaction(mongo, (conversationId) => `https://shop.example.test/transcripts/${encodeURIComponent(conversationId)}`),
    transcriptLink: (conversationId) => `${origin}/transcripts/${encodeURIComponent(conversationId)}`,
    today: () => TODAY,
  });
  // A web conversation handed to support, nobody has answered yet.
  await createHandoffStore(mongo).open({
    team: 'support',
    reason: 'asked for a person',
    channel: 'web',
    conversationId: 'web:harbour:v9:chat',
    roleId: 'support',
    customer: { address: 'v9' },
    contact: {},
    facts: {},
    lastMessages: [],
    destinations: [],
  });
  // Satisfaction on the web on 2026-11-29: a 5 with a comment, a 4, one not answered.
  const csat = createCsatStore(mongo);
  for (const [visitor, score, comment] of [
    ['v1', 5, 'Lovely service, thank you'],
    ['v2', 4, undefined],
    ['v3', undefined, undefined],
  ] as const) {
    const askedAt = Date.parse('2026-11-29T10:00:00Z');
    const key = `web:harbour:${visitor}:chat`;
    const pending = {
      id: `${key}|${askedAt}`,
      stage: 'score' as const,
      until: askedAt + 86_400_000,
      language: 'en',
      askedAt,
      channel: 'web',
      roleId: 'sales',
      withPerson: false,
      trigger: 'quiet' as const,
    };
    await csat.asked(key, pending);
    if (score === undefined) continue;
    const rated = { ...pending, score, answeredVia: 'tap' as const, answeredAt: askedAt + 60_000 };
    await csat.answered(key, rated);
    if (comment) await csat.commented(key, rated, comment, askedAt + 120_000);
  }
  // 30 days of roll-ups: whatsapp grows by a conversation a day, the web has 5 a day.
  const documents = Array.from({ length: 30 }, (_, index) => {
    const day = new Date(Date.parse(`${TODAY}T00:00:00Z`) - index * 86_400_000).toISOString().slice(0, 10);
    return [
      {
        _id: `${day}|whatsapp`,
        counts: { conv: 30 - index, in: 3 * (30 - index), out: 4 * (30 - index), unres: 2, ho: 1, 'ho_team:support': 1, 'frt:2': 1, frt_n: 1, act_run: 1 },
      },
      { _id: `${day}|web`, counts: { conv: 5, in: 9, out: 11 } },
    ];
  }).flat();
  await mongo.collection('report_rollups').insertMany(documents as never[]);
  // Two widget sites, harbour with 3 of the web's 5 conversations a day (its view of the web channel).
  await mongo.collection('report_rollups').insertMany(
    Array.from({ length: 30 }, (_, index) => ({
      _id: `${new Date(Date.parse(`${TODAY}T00:00:00Z`) - index * 86_400_000).toISOString().slice(0, 10)}|web~harbour`,
      counts: { conv: 3, in: 5, out: 6 },
    })) as never[],
  );
  // WhatsApp's support role: 4 replies a day (its view of the channel).
  await mongo.collection('report_rollups').insertMany(
    Array.from({ length: 30 }, (_, index) => ({
      _id: `${new Date(Date.parse(`${TODAY}T00:00:00Z`) - index * 86_400_000).toISOString().slice(0, 10)}|whatsapp~@support`,
      counts: { out: 4 },
    })) as never[],
  );
  // The sites and roles a report offers are those counted: a message of each, long before the ranges shown.
  await reports.store.count([
    ...['harbour', 'quay'].map((site) => ({ id: '', kind: 'in' as const, day: '2025-01-01', channel: 'web', site, conversation: `web:${site}:v0:chat` })),
    ...['sales', 'support'].map((role) => ({
      id: '',
      kind: 'out' as const,
      day: '2025-01-01',
      channel: 'whatsapp',
      role,
      conversation: 'whatsapp:+447700900999',
      teammate: false,
      at: Date.parse('2025-01-01T10:00:00Z'),
      message: `out:${role}`,
    })),
  ]);
  const app = express();
  app.use(reports.router);
  // The transcript page a waiting hand-off links to (a stand-in: the link is what is tested).
  app.get('/transcripts/:id', (_request, response) => {
    // An icon of its own: otherwise Chromium asks for /favicon.ico, and its 404 lands on the console whenever it comes back in time.
    response.type('html').send('<!doctype html><html lang="en"><title>Transcript</title><link rel="icon" href="data:,"><h1>Transcript</h1></html>');
  });
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  for (const watched of pages) await watched.close();
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await reports?.close();
  await harness?.close();
});

async function open(colorScheme: 'light' | 'dark' = 'light', viewport = DESKTOP): Promise<WatchedPage> {
  const watched = await chromium.newPage(viewport, { colorScheme });
  pages.push(watched);
  return watched;
}

async function signIn(watched: WatchedPage, path = '/admin/reports'): Promise<void> {
  const { page } = watched;
  await page.goto(`${origin}${path}`);
  expect(page.url()).toMatch(/\/admin\/reports\/sign-in/);
  // The token field has the focus: typed and sent with the keyboard alone.
  await page.waitForFunction("document.activeElement?.getAttribute('name') === 'token'");
  await page.keyboard.type(TOKEN);
  await Promise.all([page.waitForURL((url) => url.pathname === '/admin/reports'), page.keyboard.press('Enter')]);
}

const cardValue = (watched: WatchedPage, what: string) => watched.page.locator('.card', { hasText: what }).locator('.value').innerText();

function expectClean(watched: WatchedPage): void {
  expect(watched.record.console).toEqual([]);
  expect(watched.record.pageErrors).toEqual([]);
  expect(watched.record.offHostRequests).toEqual([]);
}

test('sign in, read, change the range and channel with the keyboard, download a CSV', async () => {
  const watched = await open();
  const { page } = watched;
  await signIn(watched);
  expect(await page.title()).toBe('Reports 2026-11-01 to 2026-11-30');
  // 465 whatsapp + 150 web conversations over the default 30 days.
  expect(await cardValue(watched, 'conversation-days')).toBe('615');
  // Three charts and the ratings' spread.
  expect(await page.locator('svg[role="img"]').count()).toBe(4);
  expect(await page.locator('svg > title').first().textContent()).toBe('Conversations per day');
  expect(await cardValue(watched, 'satisfaction')).toBe('4.50 / 5');
  expect(await cardValue(watched, "team's median first reply")).toBe('10 min');

  // The range: the "From" date, then the channel, each reached with Tab; Enter submits.
  const focusName = () => page.evaluate<string | undefined>("document.activeElement?.getAttribute('name') ?? document.activeElement?.tagName");
  await page.keyboard.press('Tab');
  while ((await focusName()) !== 'from') await page.keyboard.press('Tab');
  // Typed as the date field takes it (en-US: month, day, year; each part moves on to the next).
  await page.keyboard.type('11282026');
  expect(await page.locator('input[name="from"]').inputValue()).toBe('2026-11-28');
  // Past the date's remaining parts (none after the year) to the next field.
  while ((await focusName()) === 'from') await page.keyboard.press('Tab');
  expect(await focusName()).toBe('to');
  while ((await focusName()) === 'to') await page.keyboard.press('Tab');
  expect(await focusName()).toBe('channel');
  await page.keyboard.press('ArrowDown');
  expect(await page.locator('select[name="channel"]').inputValue()).toBe('whatsapp');
  // Past "Site" (all sites), "Role" (all roles) and "Group by" (days), the defaults, to Show.
  await page.keyboard.press('Tab');
  expect(await focusName()).toBe('site');
  await page.keyboard.press('Tab');
  expect(await focusName()).toBe('role');
  await page.keyboard.press('Tab');
  expect(await focusName()).toBe('group');
  await page.keyboard.press('Tab');
  expect(await focusName()).toBe('BUTTON');
  await Promise.all([page.waitForURL(/from=2026-11-28/), page.keyboard.press('Enter')]);
  expect(new URL(page.url()).search).toBe('?from=2026-11-28&to=2026-11-30&channel=whatsapp&site=all&role=all&group=day');
  expect(await cardValue(watched, 'conversation-days')).toBe('87');
  expect(await page.locator('table').first().locator('tbody tr').count()).toBe(3);

  // The CSV link carries no token: the session cookie opens it.
  const href = await page.locator('a', { hasText: 'Download per day (CSV)' }).getAttribute('href');
  expect(href).toBe('/admin/reports/csv/daily.csv?from=2026-11-28&to=2026-11-30&channel=whatsapp');
  const csv = await page.request.get(`${origin}${href}`);
  expect(csv.status()).toBe(200);
  expect((await csv.text()).split('\r\n')[1]).toBe('2026-11-28,28,0,84,112,1,26,0,yes,1,0,0,0,0,,0');
  await saveScreenshot(page, 'reports-light');
  expectClean(watched);
});

test('dark mode, the CSP, and a bad range shown as a clear error', async () => {
  const watched = await open('dark');
  const { page } = watched;
  await signIn(watched, '/admin/reports?from=2026-11-01&to=2026-11-30');
  const response = await page.reload();
  const csp = response?.headers()['content-security-policy'] ?? '';
  expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-/);
  expect(csp).not.toContain('unsafe-inline');
  // The hashed style sheet applied: dark background, light text.
  expect(await page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(13, 17, 23)');
  expect(await page.evaluate('getComputedStyle(document.body).color')).toBe('rgb(230, 237, 243)');
  expect(await page.evaluate("getComputedStyle(document.querySelector('rect.s1')).fill")).toBe('rgb(88, 166, 255)');
  await saveScreenshot(page, 'reports-dark');
  expectClean(watched);

  const bad = await page.goto(`${origin}/admin/reports?from=2024-01-01&to=2026-11-30`);
  expect(bad?.status()).toBe(400);
  expect(await page.locator('[role="alert"]').innerText()).toBe('the range is 1065 days; at most 400');
});

for (const colorScheme of ['light', 'dark'] as const) {
  test(`satisfaction at 390 px (${colorScheme}): the spread, a comment's transcript link reached by keyboard, then sign out ends the session`, async () => {
    const watched = await open(colorScheme, MOBILE);
    const { page } = watched;
    await signIn(watched);
    const section = page.locator('section[aria-labelledby="t-csat"]');
    expect(await section.locator('p').first().innerText()).toBe('4.50 / 5 from 2 answers to 3 questions asked (67% answered). Download every answer (CSV)');
    expect(await page.locator('#c-csat-d').textContent()).toBe('5: 1, 4: 1, 3: 0, 2: 0, 1: 0');
    // The spread's bars take the palette's colour.
    expect(await page.evaluate("getComputedStyle(document.querySelector('figure.spread rect.s1')).fill")).toBe(
      colorScheme === 'dark' ? 'rgb(88, 166, 255)' : 'rgb(31, 111, 235)',
    );
    // Nothing wider than the phone: the page does not scroll sideways (wide tables scroll in their own box).
    expect(await page.evaluate('document.scrollingElement.scrollWidth <= window.innerWidth')).toBe(true);
    // The comment's link, reached with Tab alone, leads to its conversation's transcript.
    const link = section.locator('ol.comments a');
    expect(await link.getAttribute('href')).toBe('https://shop.example.test/transcripts/web%3Aharbour%3Av1%3Achat');
    const isOnLink = () => page.evaluate("document.activeElement?.textContent === 'Open the conversation'");
    for (let presses = 0; presses < 200 && !(await isOnLink()); presses += 1) await page.keyboard.press('Tab');
    expect(await isOnLink()).toBe(true);
    await saveScreenshot(page, `reports-csat-phone-${colorScheme}`);
    // Sign out (the keyboard: Shift+Tab back to the page's top is long; the button is the first control).
    await page.locator('button', { hasText: 'Sign out' }).focus();
    await Promise.all([page.waitForURL(/\/sign-in$/), page.keyboard.press('Enter')]);
    await page.goto(`${origin}/admin/reports`);
    expect(page.url()).toMatch(/\/admin\/reports\/sign-in$/);
    expectClean(watched);
  });
}

for (const colorScheme of ['light', 'dark'] as const) {
  test(`a preset by keyboard at 390 px (${colorScheme}): its days, marked as shown, each figure beside the previous period's`, async () => {
    const watched = await open(colorScheme, MOBILE);
    const { page } = watched;
    await signIn(watched);
    // The default 30 days are the "Last 30 days" preset.
    expect(await page.locator('nav.presets a[aria-current="page"]').innerText()).toBe('Last 30 days');
    const isOn = () => page.evaluate("document.activeElement?.textContent === 'Last 7 days'");
    for (let presses = 0; presses < 20 && !(await isOn()); presses += 1) await page.keyboard.press('Tab');
    expect(await isOn()).toBe(true);
    await Promise.all([page.waitForURL(/preset=last-7-days/), page.keyboard.press('Enter')]);
    expect(await page.title()).toBe('Reports 2026-11-24 to 2026-11-30');
    expect(await page.locator('nav.presets a[aria-current="page"]').innerText()).toBe('Last 7 days');
    // 24..30 WhatsApp conversations a day and 5 on the web; the 7 days before: 17..23 and 5.
    const conversations = page.locator('.card', { hasText: 'conversation-days' });
    expect(await conversations.locator('.value').innerText()).toBe('224');
    expect(await conversations.locator('.before').innerText()).toBe('previous period: 175');
    expect(await page.locator('p.note').first().innerText()).toContain('2026-11-24 to 2026-11-30 (UTC days), compared with 2026-11-17 to 2026-11-23');
    // The shown preset reads as text in the palette, not as a link.
    expect(await page.evaluate("getComputedStyle(document.querySelector('nav.presets a[aria-current]')).color")).toBe(
      colorScheme === 'dark' ? 'rgb(230, 237, 243)' : 'rgb(27, 31, 36)',
    );
    expect(await page.evaluate('document.scrollingElement.scrollWidth <= window.innerWidth')).toBe(true);
    await saveScreenshot(page, `reports-presets-phone-${colorScheme}`);
    expectClean(watched);
  });
}

/** axe-core's violations on the page, as `rule: target` lines (evaluated by the test, so the page's CSP allows it). */
async function axeViolations(watched: WatchedPage): Promise<string[]> {
  const { page } = watched;
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(axe.source);
  const results = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })`,
  )) as { violations: { id: string; nodes: { target: unknown[]; failureSummary?: string }[] }[] };
  return results.violations.flatMap((violation) =>
    violation.nodes.map((node) => `${violation.id}: ${JSON.stringify(node.target)} ${node.failureSummary ?? ''}`),
  );
}

for (const colorScheme of ['light', 'dark'] as const) {
  test(`grouping by week and a waiting hand-off, by keyboard at 390 px (${colorScheme}); axe finds nothing`, async () => {
    const watched = await open(colorScheme, MOBILE);
    const { page } = watched;
    await signIn(watched);
    expect(await axeViolations(watched)).toEqual([]);
    // The hand-off waiting now, and its link reached with Tab alone.
    const waiting = page.locator('section[aria-labelledby="t-waiting"]');
    expect(await waiting.locator('p').first().innerText()).toBe("1 waiting for a teammate's first reply, oldest first (UTC).");
    expect(await waiting.locator('tbody tr').first().locator('td').nth(1).innerText()).toBe('support');
    // The seeded days have 30 hand-offs and no resolution counted: no resolution time, said so.
    expect(await page.locator('.card', { hasText: 'hand-off resolution time' }).locator('.what').innerText()).toBe(
      'median hand-off resolution time (p90 –; 0 of 30 ended)',
    );
    const focusName = () => page.evaluate<string | undefined>("document.activeElement?.getAttribute('name') ?? document.activeElement?.tagName");
    // "Group by" after the channel: Tab to it, ArrowDown to Week, Tab to Show, Enter.
    for (let presses = 0; presses < 30 && (await focusName()) !== 'group'; presses += 1) await page.keyboard.press('Tab');
    expect(await focusName()).toBe('group');
    await page.keyboard.press('ArrowDown');
    expect(await page.locator('select[name="group"]').inputValue()).toBe('week');
    await page.keyboard.press('Tab');
    expect(await focusName()).toBe('BUTTON');
    await Promise.all([page.waitForURL(/group=week/), page.keyboard.press('Enter')]);
    // 2026-11-01 (a Sunday) alone, then four whole weeks, then Monday the 30th: six bars per series.
    expect(await page.locator('#t-daily').innerText()).toBe('Per week');
    expect(await page.locator('svg[aria-labelledby="c-conv-t c-conv-d"] rect').count()).toBe(6);
    // The last two weeks hold days not yet settled (the 29th and 30th): lighter, dashed, and said so.
    expect(await page.locator('svg[aria-labelledby="c-conv-t c-conv-d"] rect.unsettled').count()).toBe(2);
    expect(await page.locator('#c-conv-d').textContent()).toContain('not yet settled: week of 2026-11-23, week of 2026-11-30');
    expect(await page.evaluate("getComputedStyle(document.querySelector('rect.unsettled')).strokeDasharray")).toBe('3px, 2px');
    // The preset links keep the grouping.
    expect(await page.locator('nav.presets a', { hasText: 'Last 7 days' }).getAttribute('href')).toBe(
      '/admin/reports?preset=last-7-days&channel=all&group=week',
    );
    expect(await page.evaluate('document.scrollingElement.scrollWidth <= window.innerWidth')).toBe(true);
    expect(await axeViolations(watched)).toEqual([]);
    await saveScreenshot(page, `reports-weeks-phone-${colorScheme}`);
    const isOnLink = () => page.evaluate("document.activeElement?.closest('section')?.getAttribute('aria-labelledby') === 't-waiting'");
    for (let presses = 0; presses < 60 && !(await isOnLink()); presses += 1) await page.keyboard.press('Tab');
    expect(await isOnLink()).toBe(true);
    await Promise.all([page.waitForURL(/\/transcripts\/web%3Aharbour%3Av9%3Achat$/), page.keyboard.press('Enter')]);
    expectClean(watched);
  });
}

for (const colorScheme of ['light', 'dark'] as const) {
  test(`a site chosen by keyboard at 390 px (${colorScheme}): its figures, kept in the links; axe finds nothing`, async () => {
    const watched = await open(colorScheme, MOBILE);
    const { page } = watched;
    await signIn(watched);
    const focusName = () => page.evaluate<string | undefined>("document.activeElement?.getAttribute('name') ?? document.activeElement?.tagName");
    // "Site" after the channel: Tab to it, ArrowDown to harbour, Tab past "Role" and "Group by" to Show, Enter.
    for (let presses = 0; presses < 30 && (await focusName()) !== 'site'; presses += 1) await page.keyboard.press('Tab');
    expect(await focusName()).toBe('site');
    expect(await page.locator('select[name="site"] option').allInnerTexts()).toEqual(['All sites', 'harbour', 'quay']);
    await page.keyboard.press('ArrowDown');
    expect(await page.locator('select[name="site"]').inputValue()).toBe('harbour');
    for (const next of ['role', 'group', 'BUTTON']) {
      await page.keyboard.press('Tab');
      expect(await focusName()).toBe(next);
    }
    await Promise.all([page.waitForURL(/site=harbour/), page.keyboard.press('Enter')]);
    // The last 30 days of harbour's conversations: 3 a day.
    expect(await cardValue(watched, 'conversation-days')).toBe('90');
    expect(await page.locator('p.note').first().innerText()).toContain('site harbour');
    expect(await page.locator('select[name="site"]').inputValue()).toBe('harbour');
    expect(await page.locator('nav.presets a', { hasText: 'Last 7 days' }).getAttribute('href')).toBe(
      '/admin/reports?preset=last-7-days&channel=all&site=harbour',
    );
    expect(await page.evaluate('document.scrollingElement.scrollWidth <= window.innerWidth')).toBe(true);
    expect(await axeViolations(watched)).toEqual([]);
    await saveScreenshot(page, `reports-site-phone-${colorScheme}`);
    expectClean(watched);
  });
}

for (const colorScheme of ['light', 'dark'] as const) {
  test(`a role chosen by keyboard at 390 px (${colorScheme}): what it did, kept in the links; axe finds nothing`, async () => {
    const watched = await open(colorScheme, MOBILE);
    const { page } = watched;
    await signIn(watched);
    const focusName = () => page.evaluate<string | undefined>("document.activeElement?.getAttribute('name') ?? document.activeElement?.tagName");
    // "Role" after the site: Tab to it, ArrowDown twice to support, Tab past "Group by" to Show, Enter.
    for (let presses = 0; presses < 30 && (await focusName()) !== 'role'; presses += 1) await page.keyboard.press('Tab');
    expect(await focusName()).toBe('role');
    expect(await page.locator('select[name="role"] option').allInnerTexts()).toEqual(['All roles', 'sales', 'support']);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await page.locator('select[name="role"]').inputValue()).toBe('support');
    for (const next of ['group', 'BUTTON']) {
      await page.keyboard.press('Tab');
      expect(await focusName()).toBe(next);
    }
    await Promise.all([page.waitForURL(/role=support/), page.keyboard.press('Enter')]);
    // The last 30 days of the support role's replies: 4 a day; no figure per conversation.
    expect(await cardValue(watched, 'messages in / out')).toBe('0 / 120');
    expect(await cardValue(watched, 'distinct conversations')).toBe('–');
    expect(await page.locator('p.note').first().innerText()).toContain('role support');
    expect(await page.locator('nav.presets a', { hasText: 'Last 7 days' }).getAttribute('href')).toBe(
      '/admin/reports?preset=last-7-days&channel=all&role=support',
    );
    expect(await page.evaluate('document.scrollingElement.scrollWidth <= window.innerWidth')).toBe(true);
    expect(await axeViolations(watched)).toEqual([]);
    await saveScreenshot(page, `reports-role-phone-${colorScheme}`);
    expectClean(watched);
  });
}
