/**
 * The widget coming back from trouble, in Chromium: opened while the service is unreachable at a
 * first visit, the panel takes the site's name, avatar and greeting as soon as the session
 * arrives (and replies are the site's); messages the service did not answer for two minutes turn
 * red but are still resent by themselves, in order, once it answers again; messages it refused
 * (a 4xx) are red with one "Send all" that sends them again in order.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, hostPage, openWidget, startWidgetHost, textsOf, waitForText, widget, type WidgetHost } from '../support/widget-page.js';

/** How long the widget's outbox waits for the service before a message turns red (GIVE_UP_MS, widget/outbox.ts). */
const GIVE_UP_MS = 120_000;
const GREETING = 'Ahoy! Ask us about moorings.';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: ({ userMessages }) => ({ text: `Answer to: ${userMessages.slice(-2).join(' + ')}` }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', greeting: GREETING, origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, { '/light': hostPage(origin, 'data-site-key="test-site"') });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

const inWidget = (page: Page, selector: string) => page.locator(`assistant-chat-widget ${selector}`);

describe('offline at the first visit', () => {
  test("the panel opened offline takes the site's name, avatar and greeting as soon as the session arrives", async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      let down = true;
      await page.route('**/api/widget/session', (route) =>
        down ? route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":"unavailable"}' }) : route.continue(),
      );
      await page.goto(`${host.origin}/light`);
      const parts = widget(page);
      await parts.launcher.click();
      await parts.input.waitFor({ state: 'visible', timeout: 10_000 });
      expect(await inWidget(page, '.title').innerText()).toBe('127.0.0.1');

      down = false;
      await eventually(async () => (await inWidget(page, '.title').innerText()) === 'Harbour Lane', 40_000);
      expect(await inWidget(page, '.header .avatar').innerText()).toBe('H');
      await waitForText(parts.assistantBubbles.first(), GREETING);
      await parts.input.fill('Is there a berth free?');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to:');
      const reply = parts.assistantBubbles.last();
      expect(await reply.locator('.sr-only').innerText()).toMatch(/^Harbour Lane/);
      expect(await inWidget(page, '.incoming').last().locator('.sender-name').innerText()).toBe('Harbour Lane');
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 70_000);
});

describe('send states', () => {
  /** Opens the widget and has one exchange (so the stream is up), then routes messages through `decide`. */
  async function withMessagesRouted(page: Page, decide: () => 'network' | 400 | undefined): Promise<string[]> {
    await page.goto(`${host.origin}/light`);
    const parts = await openWidget(page);
    await parts.input.fill('hello there');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), 'Answer to:');
    const posted: string[] = [];
    await page.route('**/api/widget/messages', async (route) => {
      const failure = decide();
      if (failure === undefined) {
        posted.push((JSON.parse(route.request().postData() ?? '{}') as { text: string }).text);
        return route.continue();
      }
      if (failure === 'network') return route.abort('connectionrefused');
      return route.fulfill({
        status: failure,
        headers: { 'Access-Control-Allow-Origin': host.origin },
        contentType: 'application/json',
        body: '{"error":"refused"}',
      });
    });
    return posted;
  }

  test('unanswered for two minutes: red, then resent by themselves in order once the service answers, no Retry left', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      await page.clock.install();
      let failure: 'network' | undefined = 'network';
      const posted = await withMessagesRouted(page, () => failure);
      const parts = widget(page);
      for (const text of ['Is the fuel dock open?', 'And the showers?']) {
        await parts.input.fill(text);
        await parts.input.press('Enter');
      }
      await page.clock.fastForward(20_000);
      await eventually(async () => (await inWidget(page, '.delivery.waiting').count()) >= 1, 15_000);
      expect(await inWidget(page, '.message.failed').count()).toBe(0);

      await page.clock.fastForward(GIVE_UP_MS);
      await eventually(async () => (await inWidget(page, '.message.failed').count()) === 2, 15_000);

      // The service answers again: nothing to press.
      failure = undefined;
      await page.clock.fastForward(20_000);
      await eventually(async () => posted.length === 2, 15_000);
      expect(posted).toEqual(['Is the fuel dock open?', 'And the showers?']);
      await eventually(async () => (await inWidget(page, '.message.failed').count()) === 0, 15_000);
      await waitForText(parts.assistantBubbles.last(), 'And the showers?', 15_000);
      expect(await page.getByRole('button', { name: 'Retry', exact: true }).count()).toBe(0);
      expect(await textsOf(parts.visitorBubbles)).toEqual(['hello there', 'Is the fuel dock open?', 'And the showers?']);
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 90_000);

  test('refused (a 4xx): red at once, with one "Send all" that sends them again in order', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      let failure: 400 | undefined = 400;
      const posted = await withMessagesRouted(page, () => failure);
      const parts = widget(page);
      for (const text of ['Book the crane', 'For Tuesday']) {
        await parts.input.fill(text);
        await parts.input.press('Enter');
        await eventually(async () => (await inWidget(page, '.message.failed').count()) === (text === 'Book the crane' ? 1 : 2));
      }
      const sendAll = page.getByRole('button', { name: 'Send all', exact: true });
      await sendAll.waitFor({ state: 'visible' });
      expect(await page.getByRole('button', { name: 'Retry', exact: true }).count()).toBe(0);
      expect(await sendAll.count()).toBe(1);

      failure = undefined;
      await sendAll.click();
      await eventually(async () => posted.length === 2);
      expect(posted).toEqual(['Book the crane', 'For Tuesday']);
      await eventually(async () => (await inWidget(page, '.message.failed').count()) === 0);
      await eventually(async () => (await bubbleText(parts.assistantBubbles.last())).includes('For Tuesday'));
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 60_000);
});
