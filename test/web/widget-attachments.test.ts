/**
 * Attachments in the widget as a visitor uses them, in headless Chromium against the real
 * service (Redis, FerretDB's GridFS, the worker) and a deterministic model that records the
 * media parts each call receives: a PDF attached with the button reaches the model as a file
 * part and is answered; a photo attached by keyboard alone shows its preview and its upload
 * progress and appears in the sent message; files the service would refuse (too big, not a
 * photo or PDF) are explained plainly and can be removed; a file dropped on the panel is
 * attached like a picked one.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { LanguageModelV4Prompt } from '@ai-sdk/provider';
import type { FileChooser, Locator, Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, saveScreenshot, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { findFreePort } from '../support/services.js';
import { openWidget, waitForText, widget } from '../support/widget-page.js';

const MAX_BYTES = 4 * 1024 * 1024;
const DEFAULT_REPLY = 'Happy to help with your mooring.';
const PDF_REPLY = 'I have read your invoice: the second charge is the berth deposit.';
const PHOTO_REPLY = 'I can see the photo: the cleat on your berth is cracked.';

let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;
/** The media types of the file parts each reply call received, in call order. */
const modelMedia: string[][] = [];

function fileParts(prompt: LanguageModelV4Prompt): string[] {
  return prompt.flatMap((message) => (message.role === 'user' ? message.content.flatMap((part) => (part.type === 'file' ? [part.mediaType] : [])) : []));
}

function hostPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harbour Lane — moorings</title></head>
<body><main><h1>Moorings</h1></main>
<script src="${origin}/widget.js" data-site-key="attach-site" async></script>
</body></html>`;
}

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    env: {
      WEB_SITES: JSON.stringify([{ key: 'attach-site', name: 'Harbour Lane', origins: [origin], greeting: 'Hi! How can I help?', language: 'en' }]),
      MEDIA_MAX_BYTES: String(MAX_BYTES),
    },
    script: (call) => {
      const media = fileParts(call.options.prompt);
      modelMedia.push(media);
      if (media.includes('application/pdf')) return { text: PDF_REPLY };
      // A photo over 1 MiB reaches the model re-encoded (downscaled to a JPEG).
      if (media.some((type) => type.startsWith('image/'))) return { text: PHOTO_REPLY };
      return { text: DEFAULT_REPLY };
    },
  });
  const app = harness.services.app;
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    if (request.url?.startsWith('/host/page')) response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(hostPage());
    else if (request.url === '/favicon.ico') response.writeHead(204).end();
    else app(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await harness?.close();
});

let opened: WatchedPage[] = [];
afterEach(async () => {
  const pages = opened;
  opened = [];
  for (const watched of pages) {
    const { record } = watched;
    await watched.close();
    expect(record.offHostRequests).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    expect(record.console).toEqual([]);
  }
});

const choosers = new WeakMap<Page, FileChooser[]>();

async function openPage(): Promise<Page> {
  const watched = await chromium.newPage(DESKTOP);
  opened.push(watched);
  // Listening from the start: Playwright turns on file chooser interception without waiting for
  // it, so a listener added just before the click can miss the chooser that click opens.
  const opens: FileChooser[] = [];
  choosers.set(watched.page, opens);
  watched.page.on('filechooser', (chooser) => opens.push(chooser));
  await watched.page.goto(`${origin}/host/page`);
  return watched.page;
}

function attachments(page: Page) {
  return {
    button: page.getByRole('button', { name: 'Attach a photo or PDF', exact: true }),
    items: page.locator('assistant-chat-widget .attachment'),
    ready: page.locator('assistant-chat-widget .attachment.ready'),
    failed: page.locator('assistant-chat-widget .attachment.failed'),
    progress: page.locator('assistant-chat-widget .attachment-progress'),
    // Drawn on a canvas from the file's bytes (issue 29: no blob: URL), or a file icon when the bytes don't decode.
    thumbnail: page.locator('assistant-chat-widget .attachment-preview :is(canvas.drawn, svg)'),
    sentImages: page.locator('assistant-chat-widget .sent-attachments :is(.thumbnail.drawn, .sent-file)'),
    sentFiles: page.locator('assistant-chat-widget .sent-file'),
  };
}

/** The next file picker the page opened. */
const nextChooser = (page: Page): Promise<FileChooser> => eventually(() => choosers.get(page)?.shift());

const isFocused = (locator: Locator): Promise<boolean> => locator.evaluate((element: { matches(selector: string): boolean }) => element.matches(':focus'));

const styleOf = (locator: Locator, property: string): Promise<string> =>
  locator.evaluate(
    (element: unknown, name: string) =>
      (globalThis as unknown as { getComputedStyle(node: unknown): { getPropertyValue(name: string): string } })
        .getComputedStyle(element)
        .getPropertyValue(name),
    property,
  );

/** Records every value the upload progress bars take, as the DOM changes. */
const RECORD_PROGRESS = `(() => {
  const root = document.querySelector('assistant-chat-widget').shadowRoot;
  window.__progress = [];
  new MutationObserver(() => {
    for (const bar of root.querySelectorAll('.attachment-progress')) {
      const value = Number(bar.getAttribute('value'));
      if (window.__progress[window.__progress.length - 1] !== value) window.__progress.push(value);
    }
  }).observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ['value'] });
})()`;

describe('attachments', () => {
  test('a PDF attached with the button reaches the model as a file part and is answered', async () => {
    const page = await openPage();
    const parts = await openWidget(page);
    const attach = attachments(page);
    await attach.button.click();
    await (await nextChooser(page)).setFiles({ name: 'invoice-0412.pdf', mimeType: 'application/pdf', buffer: PDF_BYTES });
    await attach.ready.waitFor({ state: 'visible' });
    expect(await attach.ready.innerText()).toContain('invoice-0412.pdf');

    const before = modelMedia.length;
    await parts.input.fill('Why was I charged twice?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), PDF_REPLY);
    expect(modelMedia.slice(before).flat()).toContain('application/pdf');
    // The sent message shows the document; the tray is empty again.
    expect(await attach.sentFiles.last().innerText()).toContain('invoice-0412.pdf');
    await waitForText(parts.visitorBubbles.last(), 'Why was I charged twice?');
    await saveScreenshot(page, 'widget-attachment-sent');
    expect(await attach.items.count()).toBe(0);
  });

  test('a photo attached by keyboard alone shows its preview and upload progress, and the sent message shows it', async () => {
    const page = await openPage();
    const parts = widget(page);
    const attach = attachments(page);
    await parts.launcher.waitFor({ state: 'visible' });
    await parts.launcher.focus();
    await page.keyboard.press('Enter');
    await parts.dialog.waitFor({ state: 'visible' });
    expect(await isFocused(parts.input)).toBe(true);

    // The attach button comes just before the input in the tab order, with a visible focus ring.
    await page.keyboard.press('Shift+Tab');
    expect(await isFocused(attach.button)).toBe(true);
    expect(await styleOf(attach.button, 'outline-style')).toBe('solid');
    expect(Number.parseFloat(await styleOf(attach.button, 'outline-width'))).toBeGreaterThanOrEqual(2);

    // A slow uplink, so the progress can be seen moving.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 1024 * 1024 });
    await page.evaluate(RECORD_PROGRESS);
    const photo = Buffer.concat([PNG_BYTES, Buffer.alloc(1536 * 1024, 7)]);
    await page.keyboard.press('Enter');
    await (await nextChooser(page)).setFiles({ name: 'cleat.png', mimeType: 'image/png', buffer: photo });

    await attach.thumbnail.waitFor({ state: 'visible' });
    expect(await attach.progress.getAttribute('aria-label')).toBe('Uploading cleat.png');
    await attach.ready.waitFor({ state: 'visible' });
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    const progress = (await page.evaluate('window.__progress')) as number[];
    expect(progress.at(-1)).toBe(100);
    expect(progress.some((value) => value > 0 && value < 100)).toBe(true);

    await saveScreenshot(page, 'widget-attachment-ready');
    await page.keyboard.press('Tab');
    expect(await isFocused(parts.input)).toBe(true);
    await page.keyboard.type("What's wrong here?");
    await page.keyboard.press('Enter');
    await waitForText(parts.assistantBubbles.last(), PHOTO_REPLY);
    expect(
      await attach.sentImages
        .last()
        .evaluate((node: { getAttribute(name: string): string | null; textContent: string | null }) => node.getAttribute('aria-label') ?? node.textContent),
    ).toBe('cleat.png');
    expect(await attach.sentImages.last().isVisible()).toBe(true);
  });

  test('a file too big or of the wrong kind is explained plainly, never sent, and can be removed', async () => {
    const page = await openPage();
    const parts = await openWidget(page);
    const attach = attachments(page);
    await attach.button.click();
    await (
      await nextChooser(page)
    ).setFiles([
      { name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('these are my notes, not a picture\n') },
      { name: 'scan.pdf', mimeType: 'application/pdf', buffer: Buffer.concat([PDF_BYTES, Buffer.alloc(MAX_BYTES)]) },
    ]);
    await attach.failed.nth(1).waitFor({ state: 'visible' });
    expect(await attach.failed.nth(0).locator('.attachment-status').innerText()).toBe(
      'That kind of file is not supported. Send a photo (JPEG, PNG, WebP, GIF) or a PDF.',
    );
    expect(await attach.failed.nth(1).locator('.attachment-status').innerText()).toBe('That file is too big. Files can be up to 4 MB.');

    await saveScreenshot(page, 'widget-attachment-errors');
    // Failed files are not sent: Send with nothing else sends nothing.
    await parts.input.press('Enter');
    expect(await parts.visitorBubbles.count()).toBe(0);
    expect(await page.locator('assistant-chat-widget .outgoing').count()).toBe(0);

    await page.getByRole('button', { name: 'Remove notes.png', exact: true }).click();
    await page.getByRole('button', { name: 'Remove scan.pdf', exact: true }).click();
    expect(await attach.items.count()).toBe(0);
    expect(await isFocused(attach.button)).toBe(true);

    // A PDF dropped onto the panel is attached like a picked one.
    await page.evaluate(`(() => {
      const panel = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('[role="dialog"]');
      const bytes = Uint8Array.from(atob('${PDF_BYTES.toString('base64')}'), (character) => character.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], 'dropped.pdf', { type: 'application/pdf' }));
      for (const type of ['dragenter', 'dragover', 'drop']) panel.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    })()`);
    await attach.ready.waitFor({ state: 'visible' });
    expect(await attach.ready.innerText()).toContain('dropped.pdf');
  });
});
