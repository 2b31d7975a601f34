/**
 * Issue 29, as a visitor meets it in headless Chromium (desktop, and a 390 px phone with touch)
 * against the real service: a reload keeps times, the visitor's own words and thumbnails (under
 * /demo's CSP, no blob:); the launcher is drawn while the service is down and the chat works once
 * it is back; /demo's launcher is on-screen on a phone; an Arabic exchange reads right to left; a
 * markdown reply shows no raw marker at any streaming step; every message state and focus ring
 * meets WCAG AA (computed here from the rendered colours) for the default and a light accent; a
 * slow turn says it is still being worked on; the JS API opens, closes and reports unread.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { FileChooser, Locator, Page } from 'playwright-core';
import type { ModelProvider } from '../../src/model/provider.js';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, MOBILE, saveScreenshot, type LaunchedBrowser, type PageOptions, type Viewport, type WatchedPage } from '../support/browser.js';
import { createDeterministicModels, type DeterministicModels } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, RECORD_ASSISTANT_TEXT, waitForText, widget } from '../support/widget-page.js';

const REPLY = 'I can see the damage: we will replace the cleat.';
const LIGHT_ACCENT = '#fab005';
const MARKDOWN = [
  '## Your options',
  '',
  'Our **best** berth is *really* sheltered, and _quiet_.',
  '',
  '1. Call `+1 555 0100` first',
  '2. Then email us',
  '',
  '- Fuel **on the quay**',
  '- Showers',
].join('\n');

let harness: Harness;
let models: DeterministicModels;
let chromium: LaunchedBrowser;
const servers: Server[] = [];
let serviceOrigin: string;
/** A second origin that proxies to the service, and can play dead (`down`) for everything but the script. */
let flakyOrigin: string;
let down = false;
/** Replies stream three characters at a time (each its own delta), so every markdown marker is cut somewhere. */
let paced = false;
const PIECE_DELAY_MS = 45;

function pacedWhenAsked(inner: DeterministicModels): ModelProvider {
  const pace = (model: LanguageModelV4): LanguageModelV4 => ({
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (options) => model.doGenerate(options),
    async doStream(options) {
      const result = await model.doStream(options);
      if (!paced) return result;
      const pieces = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        async transform(part, controller) {
          if (part.type !== 'text-delta') {
            controller.enqueue(part);
            return;
          }
          for (const piece of part.delta.match(/[\s\S]{1,3}/g) ?? []) {
            await new Promise((resolve) => setTimeout(resolve, PIECE_DELAY_MS));
            controller.enqueue({ ...part, delta: piece });
          }
        },
      });
      return { ...result, stream: result.stream.pipeThrough(pieces) };
    },
  });
  return { entries: (chain) => inner.entries(chain).map((entry) => ({ ...entry, model: pace(entry.model as LanguageModelV4) })) };
}

function hostPage(siteKey: string, scriptOrigin: string, api: string | undefined, embed: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Harbour Lane</title></head>
<body><main><h1>Moorings</h1><p>Seasonal and visitor berths on the east quay.</p></main>
<script src="${scriptOrigin}/widget.js" data-site-key="${siteKey}"${api ? ` data-api="${api}"` : ''}${embed} async></script>
</body></html>`;
}

function hostHandler(scriptOrigin: () => string, fallback: (request: IncomingMessage, response: ServerResponse) => void) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/favicon.ico') {
      response.writeHead(204).end();
      return;
    }
    if (url.pathname === '/host/page') {
      const theme = url.searchParams.get('theme');
      const position = url.searchParams.get('position');
      const embed = `${theme ? ` data-theme="${theme}"` : ''}${position ? ` data-position="${position}"` : ''}`;
      const page = hostPage(url.searchParams.get('site') ?? 'ux-site', scriptOrigin(), url.searchParams.get('api') ?? undefined, embed);
      response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
      return;
    }
    fallback(request, response);
  };
}

/** Forwards to the service, or (while `down`) drops every call but the script's (a CDN still has it). */
function proxy(target: number) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    if (down && !(request.method === 'GET' && request.url === '/widget.js')) {
      request.socket.destroy();
      return;
    }
    const upstream = httpRequest({ host: '127.0.0.1', port: target, path: request.url, method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  };
}

async function listen(port: number, handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<void> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
}

beforeAll(async () => {
  await writeWidgetBundle();
  const [servicePort, flakyPort] = [await findFreePort(), await findFreePort()];
  serviceOrigin = `http://127.0.0.1:${servicePort}`;
  flakyOrigin = `http://127.0.0.1:${flakyPort}`;
  models = createDeterministicModels(() => ({ text: REPLY }));
  harness = await startHarness({
    models: pacedWhenAsked(models),
    env: {
      WEB_SITES: JSON.stringify([
        // No language: the visitor's browser decides.
        { key: 'ux-site', name: 'Harbour Lane', origins: [serviceOrigin, flakyOrigin], greeting: 'Hi! How can I help?' },
        { key: 'ux-light', name: 'Sunny Quay', origins: [serviceOrigin], greeting: 'Hello!', accentColor: LIGHT_ACCENT, language: 'en' },
        { key: 'demo', name: 'Demo', origins: [serviceOrigin], greeting: 'Hi! How can I help?' },
      ]),
    },
  });
  const app = harness.services.app;
  await listen(
    servicePort,
    hostHandler(
      () => serviceOrigin,
      (request, response) => app(request, response),
    ),
  );
  await listen(
    flakyPort,
    hostHandler(() => flakyOrigin, proxy(servicePort)),
  );
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await harness?.close();
});

let opened: { watched: WatchedPage; expectedConsole: RegExp | undefined }[] = [];

afterEach(async () => {
  const pages = opened;
  opened = [];
  down = false;
  paced = false;
  models.setScript(() => ({ text: REPLY }));
  for (const { watched, expectedConsole } of pages) {
    const { record } = watched;
    await watched.close();
    expect(record.offHostRequests).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    expect(record.console.filter((message) => !expectedConsole?.test(message.text))).toEqual([]);
  }
});

const PHONE: [Viewport, PageOptions] = [MOBILE, { touch: true }];
const SIZES: [string, Viewport, PageOptions][] = [
  ['desktop', DESKTOP, {}],
  ['phone', ...PHONE],
];

const choosers = new WeakMap<Page, FileChooser[]>();

async function openPage(viewport: Viewport = DESKTOP, options: PageOptions & { expectedConsole?: RegExp } = {}): Promise<WatchedPage> {
  const watched = await chromium.newPage(viewport, options);
  opened.push({ watched, expectedConsole: options.expectedConsole });
  const opens: FileChooser[] = [];
  choosers.set(watched.page, opens);
  watched.page.on('filechooser', (chooser) => opens.push(chooser));
  return watched;
}

async function open(page: Page): Promise<ReturnType<typeof widget>> {
  const parts = widget(page);
  await parts.launcher.click();
  await parts.input.waitFor({ state: 'visible' });
  return parts;
}

const inWidget = (page: Page, selector: string): Locator => page.locator(`assistant-chat-widget ${selector}`);

type Rgb = [number, number, number];

/** The colour a computed style names (Chromium: `rgb(…)` / `rgba(…)`). */
function rgb(value: string): Rgb {
  const match = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)/.exec(value);
  if (!match) throw new Error(`not a colour: ${value}`);
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

function contrast(first: Rgb, second: Rgb): number {
  const luminance = (colour: Rgb): number => {
    const [red, green, blue] = colour.map((channel) => {
      const value = channel / 255;
      return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
    }) as Rgb;
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue;
  };
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

const style = (locator: Locator, property: string): Promise<string> =>
  locator.evaluate(
    (element: unknown, name: string) =>
      (globalThis as unknown as { getComputedStyle(node: unknown): { getPropertyValue(name: string): string } })
        .getComputedStyle(element)
        .getPropertyValue(name),
    property,
  );

/** The first opaque background behind `locator` (itself or an ancestor, across the shadow root). */
const backgroundOf = (locator: Locator): Promise<string> =>
  locator.evaluate((start: unknown) => {
    type Node = { parentElement: Node | null; getRootNode(): { host?: Node } };
    const view = globalThis as unknown as { getComputedStyle(node: unknown): { backgroundColor: string } };
    let node = start as Node | null;
    while (node) {
      const colour = view.getComputedStyle(node).backgroundColor;
      if (!/rgba\(.*, 0\)$/.test(colour) && colour !== 'transparent') return colour;
      node = node.parentElement ?? node.getRootNode().host ?? null;
    }
    return 'rgb(255, 255, 255)';
  });

/** Text colour against its background, at full opacity. */
async function textContrast(locator: Locator): Promise<number> {
  expect(await style(locator, 'opacity')).toBe('1');
  return contrast(rgb(await style(locator, 'color')), rgb(await backgroundOf(locator)));
}

/** The outline a keyboard focus draws on `locator`, against what is around it. */
async function focusRingContrast(locator: Locator): Promise<number> {
  await locator.focus();
  await locator.page().keyboard.press('Shift');
  expect(await style(locator, 'outline-style')).toBe('solid');
  expect(Number.parseFloat(await style(locator, 'outline-width'))).toBeGreaterThanOrEqual(2);
  return contrast(rgb(await style(locator, 'outline-color')), rgb(await backgroundOf(locator.locator('xpath=..'))));
}

async function attach(page: Page, files: { name: string; mimeType: string; buffer: Buffer }[]): Promise<void> {
  await page.getByRole('button', { name: 'Attach a photo or PDF', exact: true }).click();
  const chooser = await eventually(() => choosers.get(page)?.shift());
  await chooser.setFiles(files);
  await eventually(async () => (await inWidget(page, '.attachment.ready').count()) === files.length || undefined, 15_000);
}

describe('a reload keeps the conversation', () => {
  test.each(SIZES)('%s: times, the visitor’s own words and the photo’s thumbnail, under /demo’s CSP', async (_size, viewport, options) => {
    const { page } = await openPage(viewport, options);
    await page.goto(`${serviceOrigin}/demo`);
    const parts = await open(page);
    await attach(page, [
      { name: 'damage.png', mimeType: 'image/png', buffer: PNG_BYTES },
      { name: 'invoice.pdf', mimeType: 'application/pdf', buffer: PDF_BYTES },
    ]);
    await parts.input.fill('Here is a photo of the damage');
    await parts.send.click();
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
    // The thumbnail just sent is drawn (no blob: URL for the CSP to block).
    await inWidget(page, '.sent-attachments .thumbnail.drawn').waitFor();

    await page.reload();
    const again = await open(page);
    await waitForText(again.assistantBubbles.last(), REPLY, 10_000);
    const mine = again.visitorBubbles.last();
    expect(await bubbleText(mine)).toBe('Here is a photo of the damage');
    const thumbnail = inWidget(page, '.outgoing .sent-attachments .thumbnail.drawn');
    await thumbnail.waitFor();
    expect(await thumbnail.getAttribute('aria-label')).toBe('damage.png');
    const pdf = inWidget(page, '.outgoing a.sent-file');
    expect(await pdf.innerText()).toContain('invoice.pdf');
    expect(await pdf.getAttribute('href')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/widget\/media\//);
    // Each message shows its time, and screen readers hear it with the sender.
    expect(await inWidget(page, '.outgoing time').count()).toBeGreaterThanOrEqual(1);
    expect(await again.assistantBubbles.last().locator('xpath=..').locator('time').count()).toBe(1);
    expect(await mine.locator('.sr-only').innerText()).toMatch(/^You, \d{1,2}:\d{2}/);
    expect(await again.assistantBubbles.last().locator('.sr-only').innerText()).toMatch(/^Demo, \d{1,2}:\d{2}/);
    await saveScreenshot(page, `widget-history-reload-${_size}`);
  });
});

describe('the launcher is always there', () => {
  test.each(SIZES)('%s: drawn while the service is down, says so, and the chat works once it is back', async (size, viewport, options) => {
    down = true;
    const { page, record } = await openPage(viewport, { ...options, expectedConsole: /Failed to load resource|unreachable/ });
    await page.goto(`${flakyOrigin}/host/page?site=ux-site`);
    const parts = widget(page);
    await parts.launcher.waitFor({ state: 'visible' });
    await parts.launcher.click();
    const note = inWidget(page, '.launcher-note');
    await eventually(async () => (await note.innerText()).includes('Chat is unavailable right now') || undefined);
    expect(await parts.dialog.count()).toBe(0);
    await saveScreenshot(page, `widget-launcher-down-${size}`);
    const said = record.console.map((message) => message.text).filter((text) => text.startsWith('[chat widget]'));
    expect(said).toEqual([expect.stringContaining('is unreachable')]);
    expect(said.join('\n')).not.toMatch(/allowed/);

    down = false;
    // Asking again tries at once; the panel opens as soon as the session is there.
    await parts.launcher.click();
    await parts.launcher.click();
    await parts.input.waitFor({ state: 'visible', timeout: 15_000 });
    await parts.input.fill('Are you back?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
  });

  test('/demo on a 390 px phone: the launcher is on-screen and the page no wider than the screen', async () => {
    const { page } = await openPage(...PHONE);
    await page.goto(`${serviceOrigin}/demo`);
    const launcher = widget(page).launcher;
    await launcher.waitFor({ state: 'visible' });
    const box = await launcher.boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    expect(box!.y + box!.height).toBeLessThanOrEqual(844);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});

describe('right to left', () => {
  test.each(SIZES)(
    '%s: a visitor whose browser speaks Arabic gets the widget right to left, and each message takes its own direction',
    async (size, viewport, options) => {
      models.setScript(() => ({ text: 'مرحبًا! المرسى مفتوح من التاسعة حتى الخامسة.' }));
      const { page } = await openPage(viewport, { ...options, locale: 'ar-EG' });
      await page.goto(`${serviceOrigin}/host/page?site=ux-site`);
      const launcher = page.getByRole('button', { name: 'فتح المحادثة', exact: true });
      await launcher.click();
      const input = page.getByRole('textbox', { name: 'رسالتك' });
      await input.fill('متى يفتح المكتب؟');
      await input.press('Enter');
      const parts = widget(page);
      await waitForText(parts.assistantBubbles.last(), 'المرسى مفتوح', 20_000);
      expect(await inWidget(page, '.root').getAttribute('dir')).toBe('rtl');
      expect(await style(inWidget(page, '.root'), 'direction')).toBe('rtl');
      const mine = parts.visitorBubbles.last().locator('.content');
      const reply = parts.assistantBubbles.last().locator('.content p').first();
      expect(await style(mine, 'direction')).toBe('rtl');
      expect(await style(reply, 'direction')).toBe('rtl');
      // The visitor's own bubble sits on the start side of a right-to-left log: the left.
      const [mineBox, replyBox] = [await parts.visitorBubbles.last().boundingBox(), await parts.assistantBubbles.last().boundingBox()];
      expect(mineBox!.x).toBeLessThan(replyBox!.x);
      await saveScreenshot(page, `widget-arabic-${size}`);
    },
  );

  test('in an English widget, an Arabic message is still laid out right to left', async () => {
    const { page } = await openPage(DESKTOP, { locale: 'en-GB' });
    await page.goto(`${serviceOrigin}/host/page?site=ux-site`);
    const parts = await open(page);
    await parts.input.fill('שלום, מתי אתם פתוחים?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
    expect(await style(inWidget(page, '.root'), 'direction')).toBe('ltr');
    expect(await style(parts.visitorBubbles.last().locator('.content'), 'direction')).toBe('rtl');
    expect(await style(parts.assistantBubbles.last().locator('.content p').first(), 'direction')).toBe('ltr');
  });
});

describe('markdown', () => {
  test('the sample renders as lists, emphasis, code and a bold heading, with no raw marker at any streaming step', async () => {
    paced = true;
    models.setScript(() => ({ text: MARKDOWN }));
    const { page } = await openPage();
    await page.goto(`${serviceOrigin}/host/page?site=ux-site`);
    const parts = await open(page);
    await page.evaluate(RECORD_ASSISTANT_TEXT);
    await parts.input.fill('What are my options?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), 'Showers', 20_000);
    const seen = (await page.evaluate('window.__assistantTexts')) as string[];
    expect(seen.length).toBeGreaterThan(1);
    for (const text of seen) expect(text).not.toMatch(/\*|`|#|(^|\s)_|_(\s|$)/);
    const bubble = parts.assistantBubbles.last();
    expect(await bubble.locator('p > strong').first().innerText()).toBe('Your options');
    expect(await bubble.locator('em').allInnerTexts()).toEqual(['really', 'quiet']);
    expect(await bubble.locator('ol > li').count()).toBe(2);
    expect(await bubble.locator('code').innerText()).toBe('+1 555 0100');
    expect(await bubble.locator('ul > li strong').innerText()).toBe('on the quay');
  });
});

describe('states and contrast', () => {
  test.each([
    ['the default accent', 'ux-site', DESKTOP, {}],
    ['a light accent (#fab005)', 'ux-light', DESKTOP, {}],
    ['a light accent on a phone', 'ux-light', ...PHONE],
  ] as [string, string, Viewport, PageOptions][])(
    '%s: Sending…, Sent and Not sent in words at ≥ 4.5:1; focus rings, input border and launcher edge ≥ 3:1',
    async (_name, site, viewport, options) => {
      const { page } = await openPage(viewport, { ...options, expectedConsole: /Failed to load resource/ });
      await page.goto(`${serviceOrigin}/host/page?site=${site}`);
      const launcher = widget(page).launcher;
      await launcher.waitFor({ state: 'visible' });
      // The launcher's edge against the white page.
      const edge = /rgba?\([^)]*\)/.exec(await style(launcher, 'box-shadow'))?.[0] ?? '';
      expect(contrast(rgb(edge), [255, 255, 255])).toBeGreaterThanOrEqual(3);
      const parts = await open(page);

      // Sending…: the message is held on its way.
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let refuse = false;
      await page.route('**/api/widget/messages', async (route) => {
        if (refuse) {
          await route.fulfill({
            status: 400,
            contentType: 'application/json',
            body: JSON.stringify({ error: 'refused' }),
            headers: { 'Access-Control-Allow-Origin': '*' },
          });
          return;
        }
        await held;
        await route.continue();
      });
      await parts.input.fill('First question');
      await parts.input.press('Enter');
      const delivery = inWidget(page, '.delivery').last();
      await eventually(async () => (await delivery.innerText()) === 'Sending…' || undefined);
      expect(await textContrast(delivery)).toBeGreaterThanOrEqual(4.5);
      expect(await textContrast(parts.visitorBubbles.last())).toBeGreaterThanOrEqual(4.5);
      release();
      await eventually(async () => (await delivery.innerText()) === 'Sent' || undefined);
      expect(await textContrast(delivery)).toBeGreaterThanOrEqual(4.5);
      await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);

      refuse = true;
      await parts.input.fill('Second question');
      await parts.input.press('Enter');
      const failed = inWidget(page, '.delivery').last();
      await eventually(async () => (await failed.innerText()).includes('Not sent.') || undefined);
      expect(await textContrast(failed.locator('span'))).toBeGreaterThanOrEqual(4.5);
      expect(await textContrast(parts.visitorBubbles.last())).toBeGreaterThanOrEqual(4.5);

      // Focus rings on Send, Attach, the log and Remove; the input's border.
      expect(await focusRingContrast(parts.send)).toBeGreaterThanOrEqual(3);
      const attachButton = page.getByRole('button', { name: 'Attach a photo or PDF', exact: true });
      expect(await focusRingContrast(attachButton)).toBeGreaterThanOrEqual(3);
      expect(await focusRingContrast(parts.log)).toBeGreaterThanOrEqual(3);
      await parts.input.blur();
      expect(contrast(rgb(await style(parts.input, 'border-top-color')), rgb(await backgroundOf(parts.input)))).toBeGreaterThanOrEqual(3);
      await attach(page, [{ name: 'damage.png', mimeType: 'image/png', buffer: PNG_BYTES }]);
      expect(await focusRingContrast(page.getByRole('button', { name: 'Remove damage.png', exact: true }))).toBeGreaterThanOrEqual(3);
    },
  );

  test('a slow turn says it is still being worked on after 20 s', async () => {
    models.setScript(() => ({ text: REPLY, delayMs: 3_000 }));
    const { page } = await openPage();
    await page.clock.install();
    await page.goto(`${serviceOrigin}/host/page?site=ux-site`);
    const parts = await open(page);
    await parts.input.fill('Take your time');
    await parts.input.press('Enter');
    await parts.typing.waitFor({ state: 'visible', timeout: 10_000 });
    const still = inWidget(page, '.still-working');
    expect(await still.count()).toBe(0);
    await page.clock.fastForward(21_000);
    await still.waitFor({ state: 'visible' });
    expect(await still.innerText()).toBe('Still working on it…');
    expect(await textContrast(still)).toBeGreaterThanOrEqual(4.5);
    await page.clock.resume();
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
    expect(await still.count()).toBe(0);
  });
});

describe('the JS API', () => {
  test('a site that names it opens and closes the chat and hears of unread replies', async () => {
    models.setScript(() => ({ text: REPLY, delayMs: 800 }));
    const { page } = await openPage();
    await page.goto(`${serviceOrigin}/host/page?site=ux-site&api=HarbourChat`);
    const parts = widget(page);
    await parts.launcher.waitFor({ state: 'visible' });
    await page.evaluate('window.__unread = []; window.HarbourChat.onUnread((count) => window.__unread.push(count))');
    await page.evaluate('window.HarbourChat.open()');
    await parts.input.waitFor({ state: 'visible' });
    await parts.input.fill('Call me back please');
    await parts.input.press('Enter');
    await page.evaluate('window.HarbourChat.close()');
    await parts.dialog.waitFor({ state: 'hidden' });
    await eventually(async () => ((await page.evaluate('window.__unread')) as number[]).includes(1) || undefined, 20_000);
    expect(await page.title()).toBe('(1) Harbour Lane');
    expect(await inWidget(page, '.launcher-preview').innerText()).toBe(REPLY);
    await page.evaluate('window.HarbourChat.open()');
    await parts.input.waitFor({ state: 'visible' });
    expect(((await page.evaluate('window.__unread')) as number[]).at(-1)).toBe(0);
    expect(await page.title()).toBe('Harbour Lane');
    // No global of its own without data-api.
    const plain = await openPage();
    await plain.page.goto(`${serviceOrigin}/host/page?site=ux-site`);
    await widget(plain.page).launcher.waitFor({ state: 'visible' });
    expect(await plain.page.evaluate('Object.keys(window).filter((key) => /chat/i.test(key))')).toEqual([]);
  });
});

describe('embed options', () => {
  test.each([
    ['light', 'theme=light', [255, 255, 255]],
    ['dark', 'theme=dark&position=left', [16, 24, 40]],
    ['auto in a dark browser', 'theme=auto', [16, 24, 40]],
  ] as [string, string, Rgb][])('data-theme %s: the palette, readable text, and the launcher on its side', async (name, query, panel) => {
    const { page } = await openPage(DESKTOP, { colorScheme: name.startsWith('auto') ? 'dark' : 'light' });
    await page.goto(`${serviceOrigin}/host/page?site=ux-site&${query}`);
    const launcher = widget(page).launcher;
    await launcher.waitFor({ state: 'visible' });
    const box = await launcher.boundingBox();
    if (query.includes('position=left')) expect(box!.x).toBeLessThan(100);
    else expect(box!.x).toBeGreaterThan(DESKTOP.width - 100);
    const parts = await open(page);
    await parts.input.fill('Do you have a visitor berth for tonight?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
    expect(rgb(await style(parts.dialog, 'background-color'))).toEqual(panel);
    expect(await textContrast(parts.assistantBubbles.last())).toBeGreaterThanOrEqual(4.5);
    expect(await textContrast(inWidget(page, '.delivery').last())).toBeGreaterThanOrEqual(4.5);
    expect(await focusRingContrast(parts.send)).toBeGreaterThanOrEqual(3);
    await parts.input.focus();
    await saveScreenshot(page, `widget-theme-${name.split(' ')[0]}`);
  });
});

describe('attaching', () => {
  test('a pasted photo is attached, and Send while it uploads is queued behind it (a muted bubble at once), not refused', async () => {
    const { page } = await openPage();
    await page.goto(`${serviceOrigin}/host/page?site=ux-site`);
    const parts = await open(page);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/api/widget/uploads**', async (route) => {
      await held;
      await route.continue();
    });
    await page.evaluate(`(() => {
      const input = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('textarea');
      const bytes = Uint8Array.from(atob('${PNG_BYTES.toString('base64')}'), (character) => character.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
      input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    })()`);
    await inWidget(page, '.attachment.uploading').waitFor();
    await parts.input.fill('The pasted screenshot');
    await parts.input.press('Enter');
    // In the log at once, muted, waiting for the upload (widget-last-mile.test.ts covers it in full).
    await waitForText(parts.visitorBubbles.last(), 'The pasted screenshot');
    expect(await inWidget(page, '.outgoing .delivery.waiting').innerText()).toBe('Waiting for the upload…');
    release();
    await waitForText(parts.visitorBubbles.last(), 'The pasted screenshot', 15_000);
    expect(await parts.composerError.innerText()).toBe('');
    await inWidget(page, '.outgoing .sent-attachments .thumbnail.drawn').waitFor();
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
  });
});
