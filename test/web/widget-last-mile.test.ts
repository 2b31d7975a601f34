/**
 * The widget's last mile, in Chromium (issue 35): widget.js stays ≤ 20 KiB gzipped because the
 * chat is a part imported from the service's own origin (immutable, CORS open, under a strict CSP
 * with Trusted Types in widget-browser.test.ts); a message sent while its photo uploads is a
 * muted bubble at once with the upload's progress, then sent; opened while the service is down
 * at load, the panel works offline (greeting, composer, a banner) and the message waits and is
 * sent by itself once the service is back.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, MOBILE, saveScreenshot, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PNG_BYTES } from '../support/media-fixtures.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, hostPage, openWidget, startWidgetHost, waitForText, widget, type WidgetHost } from '../support/widget-page.js';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: ({ userText }) => ({ text: `Answer to: ${userText.slice(-30)}` }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, {
    '/light': hostPage(origin, 'data-site-key="test-site"'),
    '/dark': hostPage(origin, 'data-site-key="test-site" data-theme="dark"'),
  });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

const inWidget = (page: Page, selector: string) => page.locator(`assistant-chat-widget ${selector}`);

/** Pastes a PNG named `name` into the message box. */
async function pastePhoto(page: Page, name: string): Promise<void> {
  await page.evaluate(`(() => {
    const input = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('textarea');
    const bytes = Uint8Array.from(atob('${PNG_BYTES.toString('base64')}'), (character) => character.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], '${name}', { type: 'image/png' }));
    input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  })()`);
}

describe('the size budget', () => {
  // widget.js's 20 KiB (gzipped) is asserted in widget-history.test.ts.
  test('the chat part widget.js imports is served immutable, to any origin, and only under its own hash', async () => {
    const script = await harness.http.get('/widget.js');
    expect(script.status).toBe(200);
    const code = script.text;
    const file = /chat-[0-9a-f]{12}\.js/.exec(code)?.[0];
    expect(file).toBeDefined();
    const part = await harness.http.get(`/widget/part/${file}`);
    expect(part.status).toBe(200);
    expect(part.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(part.headers['access-control-allow-origin']).toBe('*');
    expect(part.headers['content-type']).toMatch(/^application\/javascript/);
    expect((await harness.http.get('/widget/part/chat-000000000000.js')).status).toBe(404);
    expect((await harness.http.get('/widget/part/..%2Fwidget.js')).status).toBe(404);
  });
});

describe('a message sent during an upload', () => {
  test.each([
    ['desktop', undefined],
    ['phone', MOBILE],
  ] as const)('%s: a muted bubble at once, "Waiting for the upload…" with its progress, then sent with the photo', async (_size, viewport) => {
    const watched = await chromium.newPage(viewport);
    try {
      const { page } = watched;
      await page.goto(`${host.origin}/light`);
      const parts = await openWidget(page);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      await page.route('**/api/widget/uploads**', async (route) => {
        await held;
        await route.continue();
      });
      await pastePhoto(page, 'mooring.png');
      await inWidget(page, '.attachment.uploading').waitFor();
      await parts.input.fill('Is this mooring line worn?');
      await parts.input.press('Enter');

      // At once: in the log, muted (not red), with the upload's progress; the composer is empty and its files went with it.
      await waitForText(parts.visitorBubbles.last(), 'Is this mooring line worn?', 2_000);
      const line = inWidget(page, '.outgoing .delivery');
      expect(await line.getAttribute('class')).toBe('delivery waiting');
      expect(await line.innerText()).toContain('Waiting for the upload…');
      const progress = line.locator('progress');
      expect(await progress.getAttribute('aria-label')).toBe('Waiting for the upload…');
      expect(await progress.getAttribute('max')).toBe('100');
      expect(await parts.input.inputValue()).toBe('');
      expect(await parts.composerError.innerText()).toBe('');
      expect(await inWidget(page, '.attachment').count()).toBe(0);
      await saveScreenshot(page, `widget-upload-waiting-${_size}`);

      release();
      await eventually(async () => ((await parts.assistantBubbles.count()) > 0 && (await bubbleText(parts.assistantBubbles.last())).startsWith('Answer to:')) || undefined, 20_000);
      await inWidget(page, '.outgoing .sent-attachments .thumbnail.drawn').waitFor();
      expect(await parts.visitorBubbles.count()).toBe(1);
      await eventually(async () => (await line.innerText()) === 'Sent' || undefined);
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 60_000);
});

describe('open while the service is down at load', () => {
  test.each(['light', 'dark'])(
    '%s: the panel opens offline (greeting, composer, banner); the message waits muted and is sent by itself once the service is back',
    async (palette) => {
      const watched = await chromium.newPage(undefined, { colorScheme: palette === 'dark' ? 'dark' : 'light' });
      try {
        const { page } = watched;
        let down = true;
        await page.route('**/api/widget/session', (route) =>
          down ? route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":"unavailable"}' }) : route.continue(),
        );
        await page.goto(`${host.origin}/${palette}`);
        const parts = widget(page);
        await parts.launcher.click();
        await parts.input.waitFor({ state: 'visible', timeout: 10_000 });
        const banner = inWidget(page, '.waiting-banner');
        expect(await banner.innerText()).toBe("We'll send your message when we're back.");
        expect(await inWidget(page, '.message.assistant').first().innerText()).toContain('Hi! How can we help?');

        await parts.input.fill('Are you open on Sunday?');
        await parts.input.press('Enter');
        await waitForText(parts.visitorBubbles.last(), 'Are you open on Sunday?', 2_000);
        expect(await inWidget(page, '.outgoing .delivery').getAttribute('class')).toBe('delivery waiting');
        expect(await parts.input.inputValue()).toBe('');
        await saveScreenshot(page, `widget-offline-at-load-${palette}`);

        down = false;
        await waitForText(parts.assistantBubbles.last(), 'Answer to: Are you open on Sunday?', 40_000);
        expect(await banner.isHidden()).toBe(true);
        expect(await parts.visitorBubbles.count()).toBe(1);
        expect(await bubbleText(parts.visitorBubbles.last())).toBe('Are you open on Sunday?');
        expect(watched.record.pageErrors).toEqual([]);
      } finally {
        await watched.close();
      }
    },
    70_000,
  );
});
