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
      // Each once; 'sent' (the message's acceptance) may reach the page after the answer's stream event on a loaded machine.
      const events = (await page.evaluate('__events')) as string[];
      expect(events[0]).toBe('unread: 0');
      expect(events.slice(1).sort()).toEqual(['message: Answer to: Do you sell rope?', 'sent: Do you sell rope?']);

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
});
