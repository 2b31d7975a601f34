/**
 * The opt-in chime, in Chromium (default autoplay policy: sound only after a user gesture), with
 * WebAudio spied on in the page: with `data-sound="on"` a reply arriving while the panel is
 * closed (or the tab hidden) plays one tone, the visitor's own message echoed from another tab
 * plays none, a reply read in the open panel none, and in a tab the visitor has not touched yet
 * (no gesture) nothing is even created and nothing throws. Without the attribute nothing plays until the script API
 * turns it on.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { hostPage, openWidget, startWidgetHost, storedVisitor, widget, type WidgetHost } from '../support/widget-page.js';

// Reports to the test as console lines "spy:<what>:<had a gesture>" (Playwright's evaluate, and the
// answer to a binding's call, would themselves count as a user gesture in Chromium): each
// AudioContext made and tone started on the real WebAudio, each page title, and the event stream
// opening.
const SPY_ON_AUDIO = `(() => {
  const report = (what) => console.debug('spy:' + what + ':' + navigator.userActivation.hasBeenActive);
  const Real = window.AudioContext;
  window.AudioContext = class extends Real {
    constructor(...args) {
      super(...args);
      report('context');
    }
  };
  const start = OscillatorNode.prototype.start;
  OscillatorNode.prototype.start = function (...args) {
    report('tone');
    return start.apply(this, args);
  };
  const Source = window.EventSource;
  window.EventSource = class extends Source {
    constructor(...args) {
      super(...args);
      this.addEventListener('open', () => report('stream'));
    }
  };
  new MutationObserver(() => report('title ' + document.title)).observe(document, { subtree: true, childList: true, characterData: true });
})()`;

interface Report {
  what: string;
  active: boolean;
}

const SPY_LINE = /^spy:(.*):(true|false)$/s;

/** Watches `page` (before it loads anything) through the spy; returns what it reports. */
async function spyOn(page: Page): Promise<Report[]> {
  const reports: Report[] = [];
  page.on('console', (message) => {
    const line = SPY_LINE.exec(message.text());
    if (line) reports.push({ what: line[1]!, active: line[2] === 'true' });
  });
  await page.addInitScript(SPY_ON_AUDIO);
  return reports;
}

/** What the page said in its console, without the spy's lines. */
const consoleOf = (watched: WatchedPage) => watched.record.console.filter((message) => !SPY_LINE.test(message.text));

const count = (reports: Report[], what: string) => reports.filter((report) => report.what === what).length;
const titled = (reports: Report[], prefix: string) => eventually(() => reports.some((report) => report.what.startsWith(`title ${prefix}`)));

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;
let sent = 0;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: ({ userText }) => ({ text: `Answer to: ${userText.slice(-30)}` }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, {
    '/sound': hostPage(origin, 'data-site-key="test-site" data-sound="on" data-api="ShopChat"'),
    '/quiet': hostPage(origin, 'data-site-key="test-site" data-api="ShopChat"'),
  });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

/** The visitor writes from another tab of the same conversation: this tab gets the echo, then the reply. */
async function sendFromAnotherTab(token: string): Promise<void> {
  sent += 1;
  const posted = await harness.http
    .post('/api/widget/messages')
    .set('Origin', host.origin)
    .set('Authorization', `Bearer ${token}`)
    .send({ clientMessageId: `other-tab-${sent}`, text: `question ${sent}` });
  expect(posted.status).toBe(202);
}

/** The replies shown (not the greeting). */
const replies = (page: Page) => widget(page).assistantBubbles.filter({ hasText: 'Answer to:' }).count();

test('opted in: a reply chimes while the panel is closed or the tab hidden, never for the echo, an open panel, or before a gesture', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    const reports = await spyOn(page);
    await page.goto(`${host.origin}/sound`);
    const parts = await openWidget(page);
    // Read in the open panel: no sound.
    await parts.input.fill('hello there');
    await parts.send.click();
    await eventually(async () => (await replies(page)) === 1);
    const token = (await storedVisitor(page)).token!;

    // Closed: the echo of the visitor's own message is silent, the reply chimes once.
    await parts.close.click();
    await sendFromAnotherTab(token);
    await titled(reports, '(1) ');
    await eventually(() => count(reports, 'tone') === 1);
    // The other tab's message shows once this tab catches up on the reply to it (a history read).
    await eventually(async () => (await parts.visitorBubbles.count()) === 2);
    expect(count(reports, 'context')).toBe(1);

    // Open, but the tab hidden: heard.
    await parts.launcher.click();
    await page.evaluate(`Object.defineProperty(document, 'hidden', { configurable: true, get: () => true })`);
    await sendFromAnotherTab(token);
    await eventually(async () => (await replies(page)) === 3);
    await eventually(() => count(reports, 'tone') === 2);

    // Another tab of the visitor's, not touched (no gesture): the reply counts as unread, silently.
    const tab = await watched.newTab();
    const tabReports = await spyOn(tab);
    await tab.goto(`${host.origin}/sound`);
    await eventually(() => count(tabReports, 'stream') > 0);
    await sendFromAnotherTab(token);
    await titled(tabReports, '(1) ');
    expect(tabReports.filter((report) => report.active)).toEqual([]);
    expect(count(tabReports, 'context') + count(tabReports, 'tone')).toBe(0);
    // The first tab (open, hidden) hears that reply on its own stream.
    await eventually(() => count(reports, 'tone') === 3);
    expect(watched.record.pageErrors).toEqual([]);
    expect(consoleOf(watched)).toEqual([]);
  } finally {
    await watched.close();
  }
}, 90_000);

test('not opted in: nothing plays, until the script API turns the chime on', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    const reports = await spyOn(page);
    await page.goto(`${host.origin}/quiet`);
    const parts = await openWidget(page);
    await parts.input.fill('hello there');
    await parts.send.click();
    await eventually(async () => (await replies(page)) === 1);
    const token = (await storedVisitor(page)).token!;
    await parts.close.click();
    await sendFromAnotherTab(token);
    await titled(reports, '(1) ');
    expect(count(reports, 'context') + count(reports, 'tone')).toBe(0);

    await page.evaluate('ShopChat.sound(true)');
    await sendFromAnotherTab(token);
    await titled(reports, '(2) ');
    await eventually(() => count(reports, 'tone') === 1);
    expect(watched.record.pageErrors).toEqual([]);
    expect(consoleOf(watched)).toEqual([]);
  } finally {
    await watched.close();
  }
}, 90_000);
