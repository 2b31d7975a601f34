/**
 * The widget's last mile, in Chromium (issue 35): widget.js stays ≤ 20 KiB gzipped because the
 * chat is a part imported from the service's own origin (immutable, CORS open, under a strict CSP
 * with Trusted Types in widget-browser.test.ts); a message sent while its photo uploads is a
 * muted bubble at once with the upload's progress, then sent; opened while the service is down
 * at load, the panel works offline (greeting, composer, a banner) and the message waits and is
 * sent by itself once the service is back; a sent photo opens in a viewer (keyboard, Escape, a
 * close button) and keeps its aspect ratio however small or wide, a sent PDF is a link at once;
 * the header's avatar initial reads at ≥ 4.5:1, Arabic sits bottom-left unless `data-position`
 * says otherwise, the greeting carries a time and "Sent" comes back after a reload; the script
 * API takes commands queued before the script loaded (on, prefill, hide/show, open/close, identify).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, MOBILE, saveScreenshot, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
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
    env: {
      WEB_SITES: JSON.stringify([
        { key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' },
        { key: 'ar-site', name: 'Harbour Lane', origins: [origin], language: 'ar' },
      ]),
    },
  });
  host = await startWidgetHost(port, harness.services.app, {
    '/light': hostPage(origin, 'data-site-key="test-site"'),
    '/dark': hostPage(origin, 'data-site-key="test-site" data-theme="dark"'),
    '/ar': hostPage(origin, 'data-site-key="ar-site"'),
    '/ar-right': hostPage(origin, 'data-site-key="ar-site" data-position="right"'),
    '/api': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main><h1>Shop</h1></main>
<script>
  window.__events = [];
  window.ShopChat = window.ShopChat || [];
  ShopChat.push(['prefill', 'Hello from the page']);
  ShopChat.push(['on', 'open', () => __events.push('open')], ['on', 'close', () => __events.push('close')]);
  ShopChat.push(['on', 'message', (message) => __events.push('message: ' + message.text)]);
  ShopChat.push(['on', 'unread', (count) => __events.push('unread: ' + count)]);
  ShopChat.push(['hide']);
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
  test("the chat part widget.js imports is served immutable, to any origin; an earlier build's hash is sent to this build's", async () => {
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
    // An earlier build's widget.js asking for its own part is sent to this build's.
    const stale = await harness.http.get('/widget/part/chat-000000000000.js');
    expect(stale.status).toBe(302);
    expect(stale.headers.location).toBe(`/widget/part/${file}`);
    expect((await harness.http.get('/widget/part/other-000000000000.js')).status).toBe(404);
    expect(script.headers['cache-control']).toBe('public, no-cache');
    expect((await harness.http.get('/widget/part/..%2Fwidget.js')).status).toBe(404);
  });
});

describe('a message sent during an upload', () => {
  test.each([
    ['desktop', undefined],
    ['phone', MOBILE],
  ] as const)(
    '%s: a muted bubble at once, "Waiting for the upload…" with its progress, then sent with the photo',
    async (_size, viewport) => {
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
        await eventually(
          async () => ((await parts.assistantBubbles.count()) > 0 && (await bubbleText(parts.assistantBubbles.last())).startsWith('Answer to:')) || undefined,
          20_000,
        );
        await inWidget(page, '.outgoing .sent-attachments .thumbnail.drawn').waitFor();
        expect(await parts.visitorBubbles.count()).toBe(1);
        await eventually(async () => (await line.innerText()) === 'Sent' || undefined);
        expect(watched.record.pageErrors).toEqual([]);
      } finally {
        await watched.close();
      }
    },
    60_000,
  );
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

/** A `width`×`height` PNG drawn in the page, pasted into the message box as `name`. */
async function pasteDrawn(page: Page, name: string, width: number, height: number): Promise<void> {
  await page.evaluate(`(async () => {
    const canvas = new OffscreenCanvas(${width}, ${height});
    const context = canvas.getContext('2d');
    context.fillStyle = '#0e7490';
    context.fillRect(0, 0, ${width}, ${height});
    const blob = await canvas.convertToBlob({ type: 'image/png' });
    const input = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('textarea');
    const data = new DataTransfer();
    data.items.add(new File([blob], '${name}', { type: 'image/png' }));
    input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  })()`);
}

/** The name of what has focus inside the widget (its aria-label, else its title, else its text). */
const focusedLabel = async (page: Page): Promise<string | null> =>
  (await page.evaluate(`(() => {
    const active = document.querySelector('assistant-chat-widget').shadowRoot.activeElement;
    return active ? active.getAttribute('aria-label') ?? active.getAttribute('title') ?? active.textContent : null;
  })()`)) as string | null;

describe('photos and documents', () => {
  test.each([
    ['desktop', undefined],
    ['phone', MOBILE],
  ] as const)(
    '%s: a photo opens in a viewer (keyboard, Escape, close button), small and wide ones keep their ratio; a PDF is a link at once',
    async (size, viewport) => {
      const watched = await chromium.newPage(viewport);
      try {
        const { page } = watched;
        await page.goto(`${host.origin}/light`);
        const parts = await openWidget(page);
        await pasteDrawn(page, 'tiny.png', 4, 3);
        await pasteDrawn(page, 'banner.png', 600, 30);
        await page.evaluate(`(() => {
        const input = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('textarea');
        const bytes = Uint8Array.from(atob('${PDF_BYTES.toString('base64')}'), (character) => character.charCodeAt(0));
        const data = new DataTransfer();
        data.items.add(new File([bytes], 'invoice.pdf', { type: 'application/pdf' }));
        input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      })()`);
        await eventually(async () => (await inWidget(page, '.attachment.ready').count()) === 3 || undefined);
        await parts.input.fill('My photos and the invoice');
        await parts.input.press('Enter');

        // The PDF is a signed link before any reload.
        const pdf = inWidget(page, '.outgoing a.sent-file');
        await pdf.waitFor();
        expect(await pdf.getAttribute('href')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/widget\/media\//);
        expect(await pdf.innerText()).toContain('invoice.pdf');

        const tiny = page.getByRole('button', { name: 'View photo tiny.png', exact: true });
        const banner = page.getByRole('button', { name: 'View photo banner.png', exact: true });
        await eventually(async () => (await inWidget(page, '.outgoing .thumbnail.drawn').count()) === 2 || undefined);
        const tinyBox = (await tiny.locator('canvas').boundingBox())!;
        const bannerBox = (await banner.locator('canvas').boundingBox())!;
        // A 4×3 photo is shown large enough to see, at 4:3; a 20:1 one at 20:1.
        expect(tinyBox.width).toBeGreaterThanOrEqual(100);
        expect(tinyBox.width / tinyBox.height).toBeCloseTo(4 / 3, 1);
        expect(bannerBox.width / bannerBox.height).toBeGreaterThan(18);
        expect(bannerBox.width / bannerBox.height).toBeLessThan(22);

        // By keyboard: the photo opens, the close button has focus, Tab goes between it and Download only; Escape closes the viewer, not the panel.
        await tiny.focus();
        await page.keyboard.press('Enter');
        const viewer = page.getByRole('dialog', { name: 'tiny.png', exact: true });
        await viewer.waitFor({ state: 'visible' });
        expect(await focusedLabel(page)).toBe('Close photo');
        await page.keyboard.press('Tab');
        expect(await focusedLabel(page)).toBe('Download');
        await page.keyboard.press('Tab');
        expect(await focusedLabel(page)).toBe('Close photo');
        const large = (await viewer.locator('canvas').boundingBox())!;
        expect(large.width).toBeGreaterThan(tinyBox.width);
        expect(large.width / large.height).toBeCloseTo(4 / 3, 1);
        await saveScreenshot(page, `widget-photo-viewer-${size}`);
        await page.keyboard.press('Escape');
        await viewer.waitFor({ state: 'detached' });
        expect(await parts.input.isVisible()).toBe(true);
        expect(await focusedLabel(page)).toBe('View photo tiny.png');

        // The wide one, by its close button.
        await banner.click();
        const wide = page.getByRole('dialog', { name: 'banner.png', exact: true });
        await wide.waitFor({ state: 'visible' });
        const wideBox = (await wide.locator('canvas').boundingBox())!;
        expect(wideBox.width / wideBox.height).toBeCloseTo(20, 0);
        await page.getByRole('button', { name: 'Close photo', exact: true }).click();
        await wide.waitFor({ state: 'detached' });
        expect(watched.record.pageErrors).toEqual([]);
      } finally {
        await watched.close();
      }
    },
    60_000,
  );
});

interface Rgba {
  r: number;
  g: number;
  b: number;
  a: number;
}

function contrast(first: Rgba, second: Rgba): number {
  const luminance = ({ r, g, b }: Rgba): number => {
    const linear = (value: number): number => (value / 255 <= 0.03928 ? value / 255 / 12.92 : ((value / 255 + 0.055) / 1.055) ** 2.4);
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  };
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

/** In the page: `selector`'s text colour and the background behind it (translucent layers blended over the first opaque one). */
const TEXT_ON_BACKGROUND = `(selector) => {
  const node = document.querySelector('assistant-chat-widget').shadowRoot.querySelector(selector);
  const parse = (value) => {
    const [r, g, b, a = 1] = /rgba?\\(([^)]+)\\)/.exec(value)[1].split(/[\\s,/]+/).filter(Boolean).map(Number);
    return { r, g, b, a };
  };
  const layers = [];
  for (let element = node; element; element = element.parentElement) {
    const colour = parse(getComputedStyle(element).backgroundColor);
    if (colour.a > 0) layers.push(colour);
    if (colour.a >= 1) break;
  }
  let background = { r: 255, g: 255, b: 255, a: 1 };
  for (const layer of layers.reverse()) {
    background = { r: layer.r * layer.a + background.r * (1 - layer.a), g: layer.g * layer.a + background.g * (1 - layer.a), b: layer.b * layer.a + background.b * (1 - layer.a), a: 1 };
  }
  return { text: parse(getComputedStyle(node).color), background };
}`;

describe('smaller things', () => {
  test.each(['light', 'dark'])(
    '%s: the avatar initials read at ≥ 4.5:1; the greeting carries a time; "Sent" comes back after a reload',
    async (palette) => {
      const watched = await chromium.newPage(undefined, { colorScheme: palette === 'dark' ? 'dark' : 'light' });
      try {
        const { page } = watched;
        await page.goto(`${host.origin}/${palette}`);
        const parts = await openWidget(page);
        for (const selector of ['.header .avatar', '.sender-avatar']) {
          const { text, background } = (await page.evaluate(`(${TEXT_ON_BACKGROUND})(${JSON.stringify(selector)})`)) as { text: Rgba; background: Rgba };
          expect([selector, contrast(text, background) >= 4.5]).toEqual([selector, true]);
        }
        const greetingTime = inWidget(page, '.incoming .sender-line time').first();
        expect(await greetingTime.innerText()).toMatch(/\d{1,2}:\d{2}/);

        await parts.input.fill('Do you sell fenders?');
        await parts.input.press('Enter');
        await waitForText(parts.assistantBubbles.last(), 'Answer to: Do you sell fenders?', 20_000);
        await eventually(async () => (await inWidget(page, '.outgoing .delivery').last().innerText()) === 'Sent' || undefined);
        await page.reload();
        const again = await openWidget(page);
        await waitForText(again.assistantBubbles.last(), 'Answer to: Do you sell fenders?', 10_000);
        await eventually(
          async () =>
            ((await inWidget(page, '.outgoing .delivery').count()) === 1 && (await inWidget(page, '.outgoing .delivery').innerText()) === 'Sent') || undefined,
        );
        // The greeting's time is the conversation's start, from the history.
        expect(await inWidget(page, '.incoming .sender-line time').first().innerText()).toMatch(/\d{1,2}:\d{2}/);
        expect(watched.record.pageErrors).toEqual([]);
      } finally {
        await watched.close();
      }
    },
    60_000,
  );

  test.each([
    ['desktop', undefined],
    ['phone', MOBILE],
  ] as const)(
    '%s: in Arabic the launcher and panel sit bottom-left, unless data-position says right',
    async (_size, viewport) => {
      const watched = await chromium.newPage(viewport, { locale: 'ar' });
      try {
        const { page } = watched;
        const width = viewport?.width ?? 1280;
        await page.goto(`${host.origin}/ar`);
        const launcher = inWidget(page, '.launcher');
        await eventually(async () => ((await inWidget(page, '.root').getAttribute('dir')) === 'rtl' ? true : undefined));
        const left = (await launcher.boundingBox())!;
        expect(left.x).toBeLessThan(width / 2);
        await launcher.click();
        const panel = inWidget(page, '.panel');
        await panel.waitFor({ state: 'visible' });
        const panelBox = (await panel.boundingBox())!;
        expect(panelBox.x).toBeLessThan(width / 2);
        await saveScreenshot(page, `widget-arabic-left-${_size}`);

        await page.goto(`${host.origin}/ar-right`);
        await eventually(async () => ((await inWidget(page, '.root').getAttribute('dir')) === 'rtl' ? true : undefined));
        const right = (await inWidget(page, '.launcher').boundingBox())!;
        expect(right.x).toBeGreaterThan(width / 2);
      } finally {
        await watched.close();
      }
    },
    60_000,
  );
});

describe('the script API', () => {
  test('commands queued before the script loaded run; on(message|open|close|unread), prefill, hide/show, identify', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      const sessions: { token?: string; user?: { id: string } }[] = [];
      page.on('request', (request) => {
        if (request.url().endsWith('/api/widget/session') && request.method() === 'POST') sessions.push(JSON.parse(request.postData() ?? '{}'));
      });
      await page.goto(`${host.origin}/api`);
      const parts = widget(page);
      // Hidden before it was drawn; shown on request.
      await eventually(async () => (await page.evaluate('typeof window.ShopChat.open')) === 'function' || undefined);
      expect(await parts.launcher.isHidden()).toBe(true);
      await page.evaluate('ShopChat.show()');
      await parts.launcher.waitFor({ state: 'visible' });

      await page.evaluate('ShopChat.open()');
      await parts.input.waitFor({ state: 'visible', timeout: 10_000 });
      expect(await parts.input.inputValue()).toBe('Hello from the page');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Hello from the page', 20_000);
      await page.evaluate('ShopChat.close()');
      // Pushed after load too: the API's push runs a command at once.
      await page.evaluate("ShopChat.push(['open'])");
      await parts.input.waitFor({ state: 'visible' });
      await eventually(async () => ((await page.evaluate('__events')) as string[]).filter((event) => event === 'open').length === 2 || undefined);
      expect(await page.evaluate('__events')).toEqual(['unread: 0', 'open', 'message: Answer to: Hello from the page', 'close', 'open']);

      // A visitor who signs in after the page loaded: a session for the same visitor, with who they are.
      const before = sessions.length;
      await page.evaluate("ShopChat.identify({ id: 'member-7', email: 'ana@example.com', ts: '1', hash: 'not-a-valid-hash' })");
      await eventually(async () => sessions.length > before || undefined);
      expect(sessions.at(-1)?.user?.id).toBe('member-7');
      expect(sessions.at(-1)?.token).toBeDefined();
      await page.evaluate('ShopChat.hide()');
      await eventually(async () => (await parts.launcher.isHidden()) || undefined);
      expect(await parts.dialog.isHidden()).toBe(true);
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 60_000);
});
