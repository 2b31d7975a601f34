/**
 * Idle visitors, in Chromium: a returning visitor who never wrote reads no history and opens no
 * event stream on a page view until they open the panel; one who wrote follows their conversation
 * from the moment the page loads (a reply while the panel is closed counts as unread).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { createEventLog, type EventLog } from '../../channels/web/event-log.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { hostPage, openWidget, startWidgetHost, storedVisitor, waitForText, widget, type WidgetHost } from '../support/widget-page.js';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;
let events: EventLog;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: ({ userText }) => ({ text: `Answer to: ${userText.slice(-30)}` }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, { '/light': hostPage(origin, 'data-site-key="test-site"') });
  events = createEventLog(harness.services.redis);
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

/** Every history read and event stream the page asks for, in order, with `mark(label)` to note what the test did meanwhile. */
function watchCalls(page: Page) {
  const calls: string[] = [];
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (path === '/api/widget/history' || path === '/api/widget/events') calls.push(path.slice('/api/widget/'.length));
  });
  return { calls, mark: (label: string) => calls.push(label) };
}

/** Loads the page and waits until the widget has its session and its (closed) panel is built. */
async function loadWidget(page: Page): Promise<void> {
  await page.goto(`${host.origin}/light`);
  await page.locator('assistant-chat-widget .panel').waitFor({ state: 'attached', timeout: 10_000 });
  // Past anything the widget starts right after building the panel.
  await page.evaluate('new Promise((resolve) => setTimeout(resolve, 0))');
}

describe('a returning visitor', () => {
  test('who never wrote reads no history and opens no stream until the panel opens', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      await loadWidget(page);
      expect((await storedVisitor(page)).token).toBeDefined();
      const { calls, mark } = watchCalls(page);
      await loadWidget(page);
      mark('opened');
      await openWidget(page);
      await eventually(async () => calls.includes('events'));
      expect(calls[0]).toBe('opened');
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });

  test('who wrote follows the conversation from page load: a reply while the panel is closed is unread', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      await page.goto(`${host.origin}/light`);
      const parts = await openWidget(page);
      await parts.input.fill('Do you rent kayaks?');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Do you rent kayaks?');

      const { calls } = watchCalls(page);
      await loadWidget(page);
      await eventually(async () => calls.includes('events'));
      const { conversationId } = await storedVisitor(page);
      await eventually(async () => {
        // Appended until the stream (open by now or soon) delivers one.
        await events.append(conversationId!, 'message', { id: `out:idle-${Date.now()}:0`, role: 'assistant', text: 'We do, from May.', at: Date.now() });
        return (await widget(page).badge.count()) > 0;
      });
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });
});
