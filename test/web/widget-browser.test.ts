/**
 * The widget as a visitor meets it, in headless Chromium against the real service (Redis,
 * FerretDB, the web channel, the worker) with a deterministic model that streams its reply a
 * word at a time. Host pages are served on the service's own origin, on a second allowed
 * origin (cross-origin, strict CSP, hostile CSS) and on an origin the site does not allow.
 * Every page must load nothing from outside 127.0.0.1, raise no page error or dialog, and log
 * nothing to the console unless the test expects it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import type { Locator, Page } from 'playwright-core';
import type { ModelProvider } from '../../src/model/provider.js';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, MOBILE, saveScreenshot, type LaunchedBrowser, type Viewport, type WatchedPage } from '../support/browser.js';
import { createDeterministicModels, type DeterministicModels } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { BROWSER_NETWORK_ERROR, bubbleText, openWidget, RECORD_ASSISTANT_TEXT, storedVisitor, textsOf, waitForText, widget } from '../support/widget-page.js';
import { findFreePort } from '../support/services.js';

const WORD_DELAY_MS = 60;
const MAX_MESSAGE_CHARS = 300;
const ACCENT = '#0b7285';
const DEFAULT_REPLY = 'Our harbour office is open from nine to five on weekdays.';

let harness: Harness;
let models: DeterministicModels;
let chromium: LaunchedBrowser;
const servers: Server[] = [];
let serviceOrigin: string;
let embedOrigin: string;
let strangerOrigin: string;

/** The deterministic model, with a pause before each word so the channel streams word by word. */
function wordByWord(inner: DeterministicModels): ModelProvider {
  const pace = (model: LanguageModelV4): LanguageModelV4 => ({
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (options) => model.doGenerate(options),
    async doStream(options) {
      const result = await model.doStream(options);
      const paced = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        async transform(part, controller) {
          if (part.type === 'text-delta') await new Promise((resolve) => setTimeout(resolve, WORD_DELAY_MS));
          controller.enqueue(part);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(paced) };
    },
  });
  return { entries: (chain) => inner.entries(chain).map((entry) => ({ ...entry, model: pace(entry.model as LanguageModelV4) })) };
}

/** A business's page: the one-line embed, a link before it, some hostile CSS, optionally a strict CSP. */
function hostPage(siteKey: string, scriptOrigin: string, strict: boolean): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Harbour Lane — moorings</title>
<link rel="stylesheet" href="/host/site.css"></head>
<body><header><a href="#main">Skip to content</a></header>
<main id="main"><h1>Moorings and berths</h1>
<p>Seasonal and visitor berths on the east quay. ${strict ? 'This page runs under a strict Content-Security-Policy.' : ''}</p></main>
<script src="${scriptOrigin}/widget.js" data-site-key="${siteKey}" async></script>
</body></html>`;
}

// Rules a careless site might ship: none of them may reach into the widget.
const HOSTILE_CSS = `
body { font: 18px/1.6 Georgia, serif; margin: 40px; color: #222; background: #fdfcf7; }
* { letter-spacing: 0.08em !important; }
button { background: #ff00ff !important; color: #00ff00 !important; border: 4px dotted #000 !important; }
div, p { border: 2px dashed orange !important; }
textarea { font-size: 40px !important; }
`;

const STRICT_CSP = [
  "default-src 'none'",
  "script-src 'self' {service}",
  'connect-src {service}',
  "style-src 'self'",
  "img-src 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** Serves /host/* pages; everything else goes to `fallback` (the service's app, on its own port). */
function hostHandler(fallback?: (request: IncomingMessage, response: ServerResponse) => void) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/favicon.ico') {
      response.writeHead(204).end();
      return;
    }
    if (url.pathname === '/host/site.css') {
      response.writeHead(200, { 'Content-Type': 'text/css' }).end(HOSTILE_CSS);
      return;
    }
    if (url.pathname === '/host/page') {
      const strict = url.searchParams.get('csp') === 'strict';
      const headers: Record<string, string> = { 'Content-Type': 'text/html; charset=utf-8' };
      if (strict) headers['Content-Security-Policy'] = STRICT_CSP.replaceAll('{service}', serviceOrigin);
      response.writeHead(200, headers).end(hostPage(url.searchParams.get('site') ?? 'test-site', serviceOrigin, strict));
      return;
    }
    if (fallback) fallback(request, response);
    else response.writeHead(404).end();
  };
}

async function listen(port: number, handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<void> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

beforeAll(async () => {
  // The service serves dist/widget when it exists: make sure that is the source under test.
  await writeWidgetBundle();
  const [servicePort, embedPort, strangerPort] = [await findFreePort(), await findFreePort(), await findFreePort()];
  serviceOrigin = `http://127.0.0.1:${servicePort}`;
  embedOrigin = `http://127.0.0.1:${embedPort}`;
  strangerOrigin = `http://127.0.0.1:${strangerPort}`;
  models = createDeterministicModels(() => ({ text: DEFAULT_REPLY }));
  harness = await startHarness({
    models: wordByWord(models),
    env: {
      WEB_SITES: JSON.stringify([
        { key: 'test-site', name: 'Harbour Lane', origins: [serviceOrigin, embedOrigin], greeting: 'Hi! How can I help?', accentColor: ACCENT, language: 'en' },
        {
          key: 'test-site-es',
          name: 'Puerto Azul',
          origins: [serviceOrigin],
          greeting: '¡Hola! ¿En qué podemos ayudarte?',
          accentColor: '#5f3dc4',
          language: 'es',
        },
      ]),
      WEB_MAX_MESSAGE_CHARS: String(MAX_MESSAGE_CHARS),
      // A team with nowhere to send notices: the hand-off is recorded and the widget told.
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support team' } }),
    },
  });
  const app = harness.services.app;
  await listen(
    servicePort,
    hostHandler((request, response) => app(request, response)),
  );
  await listen(embedPort, hostHandler());
  await listen(strangerPort, hostHandler());
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

// Pages opened by the current test, checked and closed after it.
let opened: { watched: WatchedPage; expectedConsole: RegExp | undefined }[] = [];

afterEach(async () => {
  const pages = opened;
  opened = [];
  models.setScript(() => ({ text: DEFAULT_REPLY }));
  for (const { watched, expectedConsole } of pages) {
    const { record } = watched;
    await watched.close();
    expect(record.offHostRequests).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    expect(record.dialogs).toEqual([]);
    expect(record.console.filter((message) => !expectedConsole?.test(message.text))).toEqual([]);
  }
});

async function openPage(options: { viewport?: Viewport; expectedConsole?: RegExp } = {}): Promise<WatchedPage> {
  const watched = await chromium.newPage(options.viewport ?? DESKTOP);
  opened.push({ watched, expectedConsole: options.expectedConsole });
  return watched;
}

async function visit(page: Page, query: string = 'site=test-site', origin = serviceOrigin): Promise<void> {
  await page.goto(`${origin}/host/page?${query}`);
}

const isFocused = (locator: Locator): Promise<boolean> => locator.evaluate((element: { matches(selector: string): boolean }) => element.matches(':focus'));

const computedStyle = (locator: Locator, property: string): Promise<string> =>
  locator.evaluate(
    (element: unknown, name: string) =>
      (globalThis as unknown as { getComputedStyle(node: unknown): { getPropertyValue(name: string): string } })
        .getComputedStyle(element)
        .getPropertyValue(name),
    property,
  );

async function history(page: Page): Promise<{ role: string; text: string }[]> {
  const token = await storedVisitor(page).then((visitor) => visitor.token);
  const response = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${token}`);
  return (response.body.messages as { role: string; text: string }[]).map(({ role, text }) => ({ role, text }));
}

async function sendAndAwaitReply(page: Page, text: string, reply: string): Promise<void> {
  const parts = widget(page);
  await parts.input.fill(text);
  await parts.input.press('Enter');
  await waitForText(parts.assistantBubbles.last(), reply);
}

describe('opening and sending', () => {
  test('the launcher is a button named "Open chat" in the accent colour; opening moves focus into the labelled input', async () => {
    const { page } = await openPage();
    await visit(page);
    const parts = widget(page);
    await parts.launcher.waitFor({ state: 'visible' });
    expect(await computedStyle(parts.launcher, 'background-color')).toBe('rgb(11, 114, 133)');
    expect(await parts.launcher.getAttribute('aria-expanded')).toBe('false');

    await parts.launcher.click();
    await parts.dialog.waitFor({ state: 'visible' });
    expect(await isFocused(parts.input)).toBe(true);
    expect(await parts.input.getAttribute('placeholder')).toBe('Type your message…');
    // The log itself is not live: new replies are announced once each by a region beside it (issue 29).
    expect(await parts.log.getAttribute('aria-live')).toBe('off');
    expect(await parts.dialog.getAttribute('aria-labelledby')).toBeTruthy();
    expect(await page.getByRole('heading', { name: 'Harbour Lane' }).isVisible()).toBe(true);
    expect(await textsOf(parts.assistantBubbles)).toEqual(['Hi! How can I help?']);
    expect(await parts.close.isVisible()).toBe(true);
    expect(await parts.newChat.isVisible()).toBe(true);
    expect(await parts.send.isVisible()).toBe(true);
  });

  test('a sent message shows the assistant typing, then the reply streaming in word by word', async () => {
    models.setScript(() => ({ text: DEFAULT_REPLY, delayMs: 600 }));
    const { page } = await openPage();
    await visit(page);
    const parts = await openWidget(page);
    await page.evaluate(RECORD_ASSISTANT_TEXT);

    await parts.input.fill('When is the office open?');
    await parts.send.click();
    await waitForText(parts.visitorBubbles.last(), 'When is the office open?');
    expect(await parts.input.inputValue()).toBe('');
    await parts.typing.waitFor({ state: 'visible' });
    expect(await parts.typing.innerText()).toContain('Harbour Lane is typing');

    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    await parts.typing.waitFor({ state: 'detached' });
    // The streamed words can be all there before the complete reply itself arrives and ends aria-busy.
    await eventually(async () => (await parts.assistantBubbles.last().getAttribute('aria-busy')) === null);

    const seen = (await page.evaluate('window.__assistantTexts')) as string[];
    const streamed = seen.filter((text) => text !== 'Hi! How can I help?' && text !== '');
    // Each state is a longer prefix of the final reply, and there were several of them.
    expect(streamed.at(-1)).toBe(DEFAULT_REPLY);
    expect(streamed.length).toBeGreaterThanOrEqual(4);
    streamed.forEach((text, index) => {
      expect(DEFAULT_REPLY.startsWith(text)).toBe(true);
      if (index > 0) expect(text.length).toBeGreaterThan(streamed[index - 1]!.length);
    });
    expect(await history(page)).toEqual([
      { role: 'visitor', text: 'When is the office open?' },
      { role: 'assistant', text: DEFAULT_REPLY },
    ]);
  });

  test('a reload, or another tab, shows the conversation as it was, read from the server', async () => {
    const watched = await openPage();
    const { page } = watched;
    await visit(page);
    await openWidget(page);
    await sendAndAwaitReply(page, 'Do you have visitor berths?', DEFAULT_REPLY);

    const stored = await storedVisitor(page);
    expect(Object.keys(stored).sort()).toEqual(['conversationId', 'token', 'visitorId']);
    expect(JSON.stringify(stored)).not.toContain('berths');

    await page.reload();
    const parts = await openWidget(page);
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    expect(await textsOf(parts.visitorBubbles)).toEqual(['Do you have visitor berths?']);
    expect(await textsOf(parts.assistantBubbles)).toEqual(['Hi! How can I help?', DEFAULT_REPLY]);

    const tab = await watched.newTab();
    await visit(tab);
    const other = await openWidget(tab);
    await waitForText(other.assistantBubbles.last(), DEFAULT_REPLY);
    expect(await textsOf(other.visitorBubbles)).toEqual(['Do you have visitor berths?']);
  });

  test('"New chat" empties the conversation, shows the greeting, and stays new after a reload', async () => {
    const { page } = await openPage();
    await visit(page);
    const parts = await openWidget(page);
    await sendAndAwaitReply(page, 'First question', DEFAULT_REPLY);
    const before = await storedVisitor(page);

    // One tap only asks (issue 29); Cancel keeps the conversation.
    await parts.newChat.click();
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    expect(await parts.visitorBubbles.count()).toBe(1);
    await parts.newChat.click();
    await parts.confirmNewChat.click();
    await eventually(async () => (await parts.visitorBubbles.count()) === 0);
    expect(await textsOf(parts.assistantBubbles)).toEqual(['Hi! How can I help?']);
    expect(await isFocused(parts.input)).toBe(true);
    const after = await eventually(async () => {
      const visitor = await storedVisitor(page);
      return visitor.token !== before.token ? visitor : undefined;
    });
    expect(after.visitorId).toBe(before.visitorId);
    expect(after.conversationId).not.toBe(before.conversationId);

    await page.reload();
    const reloaded = await openWidget(page);
    await page.waitForTimeout(300);
    expect(await reloaded.visitorBubbles.count()).toBe(0);
    expect(await history(page)).toEqual([]);
  });

  test('"New chat" in one tab is followed by the other tabs of the same visitor', async () => {
    const watched = await openPage();
    const { page } = watched;
    await visit(page);
    const parts = await openWidget(page);
    await sendAndAwaitReply(page, 'Question from the first tab', DEFAULT_REPLY);
    const tab = await watched.newTab();
    await visit(tab);
    const other = await openWidget(tab);
    await waitForText(other.visitorBubbles.last(), 'Question from the first tab');

    await parts.newChat.click();
    await parts.confirmNewChat.click();
    await eventually(async () => (await other.visitorBubbles.count()) === 0);
    await sendAndAwaitReply(tab, 'Question from the second tab', DEFAULT_REPLY);
    await waitForText(parts.visitorBubbles.last(), 'Question from the second tab');
    expect(await textsOf(parts.visitorBubbles)).toEqual(['Question from the second tab']);
  });

  test('a reply that arrives while the panel is closed shows an unread badge until it is opened', async () => {
    models.setScript(() => ({ text: 'We will call you back shortly.', delayMs: 700 }));
    const { page } = await openPage();
    await visit(page);
    const parts = await openWidget(page);
    await parts.input.fill('Please call me');
    await parts.input.press('Enter');
    await parts.close.click();
    expect(await isFocused(parts.launcher)).toBe(true);

    await parts.badge.waitFor({ state: 'visible', timeout: 10_000 });
    expect(await parts.badge.innerText()).toBe('1');
    await saveScreenshot(page, 'widget-unread');
    expect(await parts.launcher.getAttribute('aria-label')).toBe('Open chat, 1 new message');
    await parts.launcher.click();
    await parts.badge.waitFor({ state: 'hidden' });
    await waitForText(parts.assistantBubbles.last(), 'We will call you back shortly.');
  });
});

describe('hand-off', () => {
  test('a hand-off to a team shows a status line in the conversation', async () => {
    models.setScript((call) => {
      if (call.toolResults.length > 0) return { text: 'Someone from support will email you shortly.' };
      if (call.toolNames.includes('open_support_chat')) {
        return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Broken mooring line, wants a person', email: 'sam@example.com' } }] };
      }
      return { text: 'The hand-off tool was not offered.' };
    });
    const { page } = await openPage();
    await visit(page);
    const parts = await openWidget(page);
    await sendAndAwaitReply(page, 'My mooring line is broken, I need help from a person. sam@example.com', 'Someone from support will email you shortly.');
    const status = page.locator('assistant-chat-widget .status-line');
    expect(await textsOf(status)).toEqual(['Handed over to Support team. They will get back to you.']);
    // The status line sits between the visitor's message and the reply.
    const order = await parts.log.evaluate((log: { children: ArrayLike<{ className: string }> }) => Array.from(log.children).map((child) => child.className));
    expect(order).toEqual(['incoming', 'outgoing', 'status-line', 'incoming']);
  });
});

describe('keyboard', () => {
  test('Tab reaches the launcher, Enter opens, Shift+Enter adds a line, Enter sends, Escape closes back to the launcher', async () => {
    const { page } = await openPage();
    await visit(page);
    const parts = widget(page);
    await parts.launcher.waitFor({ state: 'visible' });

    let reached = false;
    for (let presses = 0; presses < 5 && !reached; presses += 1) {
      await page.keyboard.press('Tab');
      reached = await isFocused(parts.launcher);
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await parts.dialog.waitFor({ state: 'visible' });
    expect(await isFocused(parts.input)).toBe(true);

    await page.keyboard.type('Two lines:');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('berth and fuel');
    expect(await parts.input.inputValue()).toBe('Two lines:\nberth and fuel');
    await page.keyboard.press('Enter');
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    expect(await textsOf(parts.visitorBubbles)).toEqual(['Two lines:\nberth and fuel']);

    // The Send button follows the input in the tab order.
    await parts.input.focus();
    await page.keyboard.press('Tab');
    expect(await isFocused(parts.send)).toBe(true);

    await page.keyboard.press('Escape');
    await parts.dialog.waitFor({ state: 'hidden' });
    expect(await isFocused(parts.launcher)).toBe(true);
  });
});

describe('rendering assistant text', () => {
  test('HTML in a reply is shown as literal text; bold, lists and http(s) links are formatted safely', async () => {
    const reply = [
      'Careful: <img src=x onerror=alert(1)> and <script>alert(2)</script> stay text.',
      '',
      'What we offer:',
      '- **Visitor berths** by the night',
      '- Fuel at the east quay',
      '',
      'Read [the berth guide](https://harbour.example/guide) or https://harbour.example/fees. Not [this](javascript:alert(3)).',
    ].join('\n');
    models.setScript(() => ({ text: reply }));
    const { page } = await openPage();
    await visit(page);
    const parts = await openWidget(page);
    await sendAndAwaitReply(page, 'What do you offer?', 'Not [this](javascript:alert(3)).');
    await page.waitForTimeout(300);

    const bubble = parts.assistantBubbles.last();
    const text = await bubbleText(bubble);
    expect(text).toContain('<img src=x onerror=alert(1)>');
    expect(text).toContain('<script>alert(2)</script>');
    expect(await page.locator('assistant-chat-widget img, assistant-chat-widget script').count()).toBe(0);
    expect(await bubble.locator('strong').innerText()).toBe('Visitor berths');
    expect(await textsOf(bubble.locator('li'))).toEqual(['Visitor berths by the night', 'Fuel at the east quay']);
    expect(await bubble.locator('p').count()).toBe(3);

    const links = bubble.locator('a');
    expect(await links.count()).toBe(2);
    expect(await links.nth(0).innerText()).toBe('the berth guide');
    expect(await links.nth(0).getAttribute('href')).toBe('https://harbour.example/guide');
    expect(await links.nth(1).getAttribute('href')).toBe('https://harbour.example/fees');
    for (const index of [0, 1]) {
      expect(await links.nth(index).getAttribute('target')).toBe('_blank');
      expect(await links.nth(index).getAttribute('rel')).toBe('noopener noreferrer');
    }
  });
});

describe('failures the visitor is told about', () => {
  test('a message over the limit is refused in place, keeps the text, and is never sent', async () => {
    const { page } = await openPage();
    await visit(page);
    const parts = await openWidget(page);
    const replyCalls = models.replyCalls().length;
    const tooLong = 'x'.repeat(MAX_MESSAGE_CHARS + 1);
    await parts.input.fill(tooLong);
    await parts.input.press('Enter');
    await eventually(async () => (await parts.composerError.innerText()).includes(`${MAX_MESSAGE_CHARS} characters`));
    expect(await parts.input.inputValue()).toBe(tooLong);
    expect(await parts.visitorBubbles.count()).toBe(0);
    expect(await page.locator('assistant-chat-widget .counter').innerText()).toBe(`${MAX_MESSAGE_CHARS + 1} / ${MAX_MESSAGE_CHARS}`);
    expect(models.replyCalls().length).toBe(replyCalls);
  });

  test('a 429 is explained and honoured: the message is resent with the same id only after Retry-After', async () => {
    const { page } = await openPage({ expectedConsole: BROWSER_NETWORK_ERROR });
    await visit(page);
    const parts = await openWidget(page);
    const attempts: { at: number; clientMessageId: string }[] = [];
    await page.route('**/api/widget/messages', async (route) => {
      attempts.push({ at: Date.now(), clientMessageId: JSON.parse(route.request().postData() ?? '{}').clientMessageId });
      if (attempts.length > 1) return route.continue();
      // The service's own answer when a visitor sends too fast (its window is a minute long).
      return route.fulfill({
        status: 429,
        headers: { 'Retry-After': '2', 'Access-Control-Allow-Origin': serviceOrigin },
        contentType: 'application/json',
        body: JSON.stringify({ error: 'too many messages, retry later', retryAfterSeconds: 2 }),
      });
    });
    await parts.input.fill('Is there a waiting list?');
    await parts.input.press('Enter');
    await eventually(async () => (await parts.composerError.innerText()).includes('Sending again in 2 s'));
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);

    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.clientMessageId).toBe(attempts[0]!.clientMessageId);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(2_000);
    expect(await parts.composerError.innerText()).toBe('');
    expect(await history(page)).toEqual([
      { role: 'visitor', text: 'Is there a waiting list?' },
      { role: 'assistant', text: DEFAULT_REPLY },
    ]);
  });

  test('offline: a banner, the message marked not sent yet; back online it is sent once by itself, with no click', async () => {
    const watched = await openPage({ expectedConsole: BROWSER_NETWORK_ERROR });
    const { page, context } = watched;
    await visit(page);
    const parts = await openWidget(page);
    const clientIds: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/widget/messages') && request.method() === 'POST') {
        clientIds.push(JSON.parse(request.postData() ?? '{}').clientMessageId);
      }
    });

    await context.setOffline(true);
    await page.locator('assistant-chat-widget .banner').waitFor({ state: 'visible' });
    expect(await page.locator('assistant-chat-widget .banner').innerText()).toContain("You're offline");
    await parts.input.fill('Can I book for Friday?');
    await parts.input.press('Enter');
    const delivery = page.locator('assistant-chat-widget .delivery');
    // "Sending…" first, then the failed attempt marks it as waiting for the connection.
    await eventually(
      async () => (await delivery.count()) > 0 && (await delivery.innerText()).includes('Not sent yet. It will be sent when the connection is back.'),
    );
    // Offline has its own banner: no "Reconnecting…" on top of it.
    expect(await page.locator('assistant-chat-widget .connection').isHidden()).toBe(true);
    await saveScreenshot(page, 'widget-offline');

    await context.setOffline(false);
    await page.locator('assistant-chat-widget .banner').waitFor({ state: 'hidden' });
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    expect(new Set(clientIds).size).toBe(1);
    // Nothing but "Sent" (issue 29: the state in words) under the visitor's messages.
    expect((await page.locator('assistant-chat-widget .delivery:visible').allInnerTexts()).filter((text) => text !== 'Sent')).toEqual([]);
    expect(await history(page)).toEqual([
      { role: 'visitor', text: 'Can I book for Friday?' },
      { role: 'assistant', text: DEFAULT_REPLY },
    ]);
  });

  test('a message the service refuses outright (a 4xx) stays "Not sent." with Retry, is not resent by itself, and Retry sends it once', async () => {
    const { page, context } = await openPage({ expectedConsole: BROWSER_NETWORK_ERROR });
    await visit(page);
    const parts = await openWidget(page);
    const attempts: string[] = [];
    let refuse = true;
    await page.route('**/api/widget/messages', async (route) => {
      attempts.push(JSON.parse(route.request().postData() ?? '{}').clientMessageId);
      if (!refuse) return route.continue();
      return route.fulfill({
        status: 400,
        headers: { 'Access-Control-Allow-Origin': serviceOrigin },
        contentType: 'application/json',
        body: JSON.stringify({ error: 'page.url: Invalid URL' }),
      });
    });
    await parts.input.fill('Do you sell ice?');
    await parts.input.press('Enter');
    const retry = page.getByRole('button', { name: 'Retry' });
    await retry.waitFor({ state: 'visible' });
    expect(await page.locator('assistant-chat-widget .delivery').innerText()).toContain('Not sent.');
    expect(await page.locator('assistant-chat-widget .connection').isHidden()).toBe(true);

    // Coming back online resumes whatever waits for the service; a refused message is not waiting.
    await context.setOffline(true);
    await context.setOffline(false);
    await page.waitForTimeout(2_000);
    expect(attempts).toHaveLength(1);
    expect(await retry.isVisible()).toBe(true);

    refuse = false;
    await retry.click();
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]).toBe(attempts[0]);
  });

  test('an answer lost on the way back is retried with the same id and creates no second turn', async () => {
    const { page } = await openPage({ expectedConsole: BROWSER_NETWORK_ERROR });
    await visit(page);
    const parts = await openWidget(page);
    const outcomes: { clientMessageId: string; duplicate: boolean }[] = [];
    await page.route('**/api/widget/messages', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { messageId: string; duplicate: boolean };
      outcomes.push({ clientMessageId: body.messageId, duplicate: body.duplicate });
      // The service took the first one; the browser never hears back.
      if (outcomes.length === 1) return route.abort('connectionreset');
      return route.fulfill({ response });
    });
    const replyCalls = models.replyCalls().length;
    await parts.input.fill('Is the fuel dock open today?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    await page.waitForTimeout(500);

    expect(outcomes).toEqual([
      { clientMessageId: outcomes[0]!.clientMessageId, duplicate: false },
      { clientMessageId: outcomes[0]!.clientMessageId, duplicate: true },
    ]);
    expect(models.replyCalls().length).toBe(replyCalls + 1);
    expect(await textsOf(parts.visitorBubbles)).toEqual(['Is the fuel dock open today?']);
    expect(await history(page)).toHaveLength(2);
  });

  test('a 401 renews the session once and resends the same message', async () => {
    const { page } = await openPage({ expectedConsole: BROWSER_NETWORK_ERROR });
    await visit(page);
    const parts = await openWidget(page);
    const sessions: number[] = [];
    const attempts: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/widget/session') && request.method() === 'POST') sessions.push(Date.now());
    });
    await page.route('**/api/widget/messages', async (route) => {
      attempts.push(JSON.parse(route.request().postData() ?? '{}').clientMessageId);
      if (attempts.length > 1) return route.continue();
      return route.fulfill({
        status: 401,
        headers: { 'Access-Control-Allow-Origin': serviceOrigin },
        contentType: 'application/json',
        body: JSON.stringify({ error: 'token expired' }),
      });
    });
    await parts.input.fill('Still there?');
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]).toBe(attempts[0]);
    expect(sessions).toHaveLength(1);
  });
});

describe('embedding', () => {
  test('on another origin, under a strict CSP with Trusted Types and hostile CSS, it looks and works the same', async () => {
    const { page } = await openPage();
    await visit(page, 'site=test-site&csp=strict', embedOrigin);
    const parts = widget(page);
    await parts.launcher.waitFor({ state: 'visible' });
    expect(await computedStyle(parts.launcher, 'background-color')).toBe('rgb(11, 114, 133)');
    expect(await computedStyle(parts.launcher, 'border-top-style')).toBe('none');

    await parts.launcher.click();
    await parts.input.waitFor({ state: 'visible' });
    expect(await computedStyle(parts.input, 'font-size')).toBe('15px');
    expect(await computedStyle(parts.log, 'border-top-style')).toBe('none');
    await sendAndAwaitReply(page, 'Hello from another site', DEFAULT_REPLY);
  });

  test('on an origin the site does not allow, nothing is shown and one console error says why', async () => {
    const { page, record } = await openPage({
      expectedConsole: new RegExp(`^\\[chat widget\\]|${BROWSER_NETWORK_ERROR.source}|has been blocked by CORS policy`),
    });
    await visit(page, 'site=test-site', strangerOrigin);
    await eventually(() => record.console.some((message) => message.text.startsWith('[chat widget]')), 10_000);
    await page.waitForTimeout(500);
    expect(await page.locator('assistant-chat-widget').count()).toBe(0);
    const errors = record.console.filter((message) => message.text.startsWith('[chat widget]'));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.type).toBe('error');
    expect(errors[0]!.text).toContain(strangerOrigin);
    expect(errors[0]!.text).toMatch(/not (allowed|among the allowed origins)/);
  });

  test('a site whose language is Spanish gets the widget in Spanish', async () => {
    const { page } = await openPage();
    await visit(page, 'site=test-site-es');
    const launcher = page.getByRole('button', { name: 'Abrir chat', exact: true });
    await launcher.waitFor({ state: 'visible' });
    expect(await computedStyle(launcher, 'background-color')).toBe('rgb(95, 61, 196)');
    await launcher.click();
    const input = page.getByRole('textbox', { name: 'Tu mensaje' });
    await input.waitFor({ state: 'visible' });
    expect(await input.getAttribute('placeholder')).toBe('Escribe tu mensaje…');
    expect(await page.getByRole('button', { name: 'Enviar', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Nuevo chat', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Cerrar chat', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('log', { name: 'Conversación' }).isVisible()).toBe(true);
    expect(await textsOf(widget(page).assistantBubbles)).toEqual(['¡Hola! ¿En qué podemos ayudarte?']);
  });
});

describe('screenshots', () => {
  const conversation = async (viewport: Viewport): Promise<Page> => {
    models.setScript(() => ({
      text: [
        'Yes, we have **visitor berths** on the east quay:',
        '- Up to 12 m: £28 a night',
        '- 12–18 m: £41 a night',
        '',
        'You can book online at https://harbour.example/berths or call the office.',
      ].join('\n'),
    }));
    const { page } = await openPage({ viewport });
    await visit(page);
    await openWidget(page);
    await sendAndAwaitReply(page, 'Do you have a berth for a 10 m yacht this weekend?', 'call the office.');
    await page.mouse.move(0, 0);
    return page;
  };

  test('desktop 1280×800: the panel sits in the corner over the page', async () => {
    const page = await conversation(DESKTOP);
    const box = await widget(page).dialog.boundingBox();
    expect(box).toMatchObject({ width: 380 });
    expect(box!.x + box!.width).toBe(DESKTOP.width - 20);
    await saveScreenshot(page, 'widget-desktop');
  });

  test('mobile 390×844: the panel fills the screen', async () => {
    const page = await conversation(MOBILE);
    expect(await widget(page).dialog.boundingBox()).toEqual({ x: 0, y: 0, width: MOBILE.width, height: MOBILE.height });
    await saveScreenshot(page, 'widget-mobile');
  });
});

describe('typing reports (issue 26)', () => {
  test('typing is reported over the visitor token, at most once a second; emptying the composer reports the stop, sending does not', async () => {
    const { page } = await openPage();
    const reports: { typing: boolean; authorized: boolean }[] = [];
    page.on('request', (request) => {
      if (request.method() !== 'POST' || !request.url().endsWith('/api/widget/typing')) return;
      reports.push({
        typing: (JSON.parse(request.postData() ?? '{}') as { typing: boolean }).typing,
        authorized: /^Bearer v1\./.test(request.headers().authorization ?? ''),
      });
    });
    await visit(page);
    const parts = await openWidget(page);
    const started = Date.now();
    await parts.input.pressSequentially('Do you sell diesel', { delay: 10 });
    const elapsed = Date.now() - started;
    await eventually(() => reports.length > 0 || undefined);
    // Eighteen keystrokes: one report, and one more per second they took at most.
    expect(reports.every((report) => report.typing && report.authorized)).toBe(true);
    expect(reports.length).toBeLessThanOrEqual(Math.floor(elapsed / 1000) + 1);
    await parts.input.fill('');
    await eventually(() => reports.length > 1 || undefined);
    expect(reports.at(-1)).toEqual({ typing: false, authorized: true });
    const stopped = reports.length;
    await parts.input.pressSequentially('Do you sell diesel?', { delay: 10 });
    await eventually(() => reports.length > stopped || undefined);
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), DEFAULT_REPLY);
    // The message itself ends the typing: no stop report follows it.
    expect(reports.slice(stopped).every((report) => report.typing)).toBe(true);
    expect(reports.filter((report) => !report.typing)).toHaveLength(1);
  });
});
