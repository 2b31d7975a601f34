/**
 * The site owner's script API, in Chromium: `on('sent')` hears each message the service took,
 * `off(event, callback)` stops a listener (the unread one too), and `state()` says whether the
 * panel is open, how many replies are unread and whether the page named a signed-in user.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { openWidget, startWidgetHost, waitForText, widget, type WidgetHost } from '../support/widget-page.js';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;
/** Holds the answer to "And chain?" until the test has closed the panel. */
let releaseChain: () => void = () => undefined;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: async ({ userText }) => {
      if (userText.includes('chain')) await new Promise<void>((resolve) => (releaseChain = resolve));
      return { text: `Answer to: ${userText.slice(-30)}` };
    },
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, {
    '/api': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main><h1>Shop</h1></main>
<script>
  window.__events = [];
  window.__onMessage = (message) => __events.push('message: ' + message.text);
  window.__onUnread = (count) => __events.push('unread: ' + count);
  window.ShopChat = window.ShopChat || [];
  ShopChat.push(['on', 'sent', (message) => __events.push('sent: ' + message.text)]);
  ShopChat.push(['on', 'message', __onMessage], ['on', 'unread', __onUnread]);
</script>
<script src="${origin}/widget.js" data-site-key="test-site" data-api="ShopChat" async></script></body></html>`,
  });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

describe('the script API', () => {
  test("'sent', off() and state()", async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      await page.goto(`${host.origin}/api`);
      await widget(page).launcher.waitFor();
      await eventually(async () => (await page.evaluate('typeof ShopChat.state')) === 'function');
      expect(await page.evaluate('ShopChat.state()')).toEqual({ open: false, unread: 0, signedIn: false });

      const parts = await openWidget(page);
      expect(await page.evaluate('ShopChat.state()')).toEqual({ open: true, unread: 0, signedIn: false });
      await parts.input.fill('Do you sell rope?');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Do you sell rope?');
      await eventually(async () => ((await page.evaluate('__events')) as string[]).includes('message: Answer to: Do you sell rope?'));
      expect(await page.evaluate('__events')).toEqual(['unread: 0', 'sent: Do you sell rope?', 'message: Answer to: Do you sell rope?']);

      // Off: the message and unread listeners hear nothing more; the sent one still does.
      await page.evaluate(`ShopChat.off('message', __onMessage); ShopChat.off('unread', __onUnread); ShopChat.close()`);
      expect(await page.evaluate('ShopChat.state()')).toEqual({ open: false, unread: 0, signedIn: false });
      await page.evaluate('ShopChat.open()');
      await parts.input.fill('And chain?');
      await parts.input.press('Enter');
      await waitForText(parts.visitorBubbles.last(), 'And chain?');
      await page.evaluate('ShopChat.close()');
      await eventually(async () => {
        releaseChain();
        return (await page.evaluate('ShopChat.state().unread')) === 1;
      });
      expect(await page.evaluate('__events')).toEqual(['unread: 0', 'sent: Do you sell rope?', 'message: Answer to: Do you sell rope?', 'sent: And chain?']);
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });

  /**
   * The service takes the message, but its answer to the send reaches the page only after the
   * reply came on the event stream (held here until then; on a loaded machine it just happens).
   * `late` is what that held answer turns out to be: the service's own, or a failing service's (a 503).
   */
  test.each([
    ['the send answers ok', 'ok'],
    ['the send answers 503 after all', 'failing'],
  ] as const)("'sent' comes before the reply's 'message' when the reply outruns the send's answer (%s)", async (_name, late) => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      await page.goto(`${host.origin}/api`);
      const parts = await openWidget(page);
      // A first exchange: the event stream is open before the message that races it.
      await parts.input.fill('Hello there');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Hello there');

      const sends: string[] = [];
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      await page.route('**/api/widget/messages', async (route) => {
        sends.push(JSON.parse(route.request().postData() ?? '{}').text);
        if (sends.length > 1) return route.continue();
        // Through to the service (which takes it and answers on the stream), its answer held.
        const response = await route.fetch();
        await held;
        return late === 'ok' ? route.fulfill({ response }) : route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":"unavailable"}' });
      });
      await parts.input.fill('Is the shop open today?');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Is the shop open today?');
      const delivery = page.locator('assistant-chat-widget .outgoing').last().locator('.delivery');
      expect(await delivery.innerText()).toBe('Sent');
      release();

      // The next message goes out only once the held send is settled: by then a second 'sent' or a resend would have happened.
      await parts.input.fill('Thanks');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Thanks');
      await eventually(async () => ((await page.evaluate('__events')) as string[]).includes('message: Answer to: Thanks'));
      expect(((await page.evaluate('__events')) as string[]).filter((event) => !event.startsWith('unread'))).toEqual([
        'sent: Hello there',
        'message: Answer to: Hello there',
        'sent: Is the shop open today?',
        'message: Answer to: Is the shop open today?',
        'sent: Thanks',
        'message: Answer to: Thanks',
      ]);
      expect(sends).toEqual(['Is the shop open today?', 'Thanks']);
      expect(await page.locator('assistant-chat-widget .delivery.waiting, assistant-chat-widget .delivery.failed').count()).toBe(0);
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });
});
