/**
 * Who the visitor is talking to, and what a browser review found, in headless Chromium against
 * the real service: the header's subtitle and each message's sender line follow the widget's
 * events (a teammate's messages and the conversation's holder, written to the event log as the
 * takeover writes them), consecutive messages from one sender are grouped, a page's inherited
 * `text-shadow` stays out, a bare URL before "]" is linked without it, and on a phone the close
 * button is a 44 px target, the page behind the open panel does not scroll, and opening does
 * not focus the input (which would pop up the keyboard).
 */
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Locator, Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { createEventLog, type EventLog } from '../../channels/web/event-log.js';
import { DESKTOP, launchBrowser, MOBILE, saveScreenshot, type LaunchedBrowser, type Viewport, type WatchedPage } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { bubbleText, openWidget, storedVisitor, textsOf, waitForText, widget } from '../support/widget-page.js';
import { findFreePort } from '../support/services.js';

const REPLY = 'Our harbour office is open from nine to five on weekdays.';

let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;
let events: EventLog;

// A careless page: an inherited text-shadow on everything, and enough content to scroll.
const HOST_CSS = `* { text-shadow: 2px 2px 3px rgb(255, 0, 0); } body { margin: 0; font: 17px Georgia, serif; } .tall { height: 3000px; }`;

function hostPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Harbour Lane — moorings</title><link rel="stylesheet" href="/host/site.css"></head>
<body><main id="main"><h1>Moorings and berths</h1><div class="tall">Seasonal and visitor berths on the east quay.</div></main>
<script src="${origin}/widget.js" data-site-key="presence-site" async></script></body></html>`;
}

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: () => ({ text: REPLY }),
    env: {
      WEB_SITES: JSON.stringify([
        { key: 'presence-site', name: 'Harbour Lane', origins: [origin], greeting: 'Hi! How can I help?', accentColor: '#0b7285', language: 'en' },
      ]),
    },
  });
  events = createEventLog(harness.services.redis);
  const app = harness.services.app;
  server = createServer((request, response) => {
    if (request.url === '/host/site.css') response.writeHead(200, { 'Content-Type': 'text/css' }).end(HOST_CSS);
    else if (request.url === '/host/page') response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(hostPage());
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
  await events?.close();
  await harness?.close();
});

let opened: WatchedPage[] = [];
afterEach(async () => {
  const pages = opened;
  opened = [];
  harness.models.setScript(() => ({ text: REPLY }));
  for (const watched of pages) {
    await watched.close();
    expect(watched.record.offHostRequests).toEqual([]);
    expect(watched.record.pageErrors).toEqual([]);
    expect(watched.record.console).toEqual([]);
  }
});

async function visit(viewport: Viewport = DESKTOP): Promise<Page> {
  const watched = await chromium.newPage(viewport);
  opened.push(watched);
  await watched.page.goto(`${origin}/host/page`);
  return watched.page;
}

async function sendAndAwaitReply(page: Page, text: string, reply: string): Promise<void> {
  const parts = widget(page);
  await parts.input.fill(text);
  await parts.input.press('Enter');
  await waitForText(parts.assistantBubbles.last(), reply);
}

const ANA = { kind: 'teammate', name: 'Ana', team: 'Support' } as const;

/** What the takeover writes for the widget: the holder, and a teammate's message. */
async function teammateSays(page: Page, id: string, text: string): Promise<void> {
  const { conversationId } = await storedVisitor(page, 'presence-site');
  await events.append(conversationId!, 'message', { id, role: 'assistant', text, sender: ANA, at: Date.now() });
}

async function holderIs(page: Page, holder: typeof ANA | { kind: 'assistant' }): Promise<void> {
  const { conversationId } = await storedVisitor(page, 'presence-site');
  await events.append(conversationId!, 'state', { holder });
}

const subtitle = (page: Page) => page.locator('assistant-chat-widget .subtitle');
const messages = (page: Page) => page.locator('assistant-chat-widget .log > .incoming, assistant-chat-widget .log > .outgoing');

/** Per message in the log: whose line heads it (empty when it continues a group) and its text. */
async function logShape(page: Page): Promise<{ line: string; text: string }[]> {
  const all = messages(page);
  const shape: { line: string; text: string }[] = [];
  for (let index = 0; index < (await all.count()); index += 1) {
    const message = all.nth(index);
    const line = message.locator('.sender-line');
    const visible = await line.isVisible();
    shape.push({
      line: visible ? (await line.innerText()).replace(/\s+/g, ' ').replace(/\d{1,2}:\d{2}( [AP]M)?/, 'HH:MM') : '',
      text: await bubbleText(message.locator('.message')),
    });
  }
  return shape;
}

const computed = (locator: Locator, property: string): Promise<string> =>
  locator.evaluate(
    (element: unknown, name: string) =>
      (globalThis as unknown as { getComputedStyle(node: unknown): { getPropertyValue(name: string): string } })
        .getComputedStyle(element)
        .getPropertyValue(name),
    property,
  );

describe('who the visitor is talking to', () => {
  test('a teammate taking over: the subtitle names them and their team, their messages carry their name; hand-back restores the assistant', async () => {
    const page = await visit();
    const parts = await openWidget(page);
    expect(await subtitle(page).innerText()).toBe("You're chatting with our assistant");
    await sendAndAwaitReply(page, 'I need a person about my mooring', REPLY);

    await holderIs(page, ANA);
    await eventually(async () => (await subtitle(page).innerText()) === "You're chatting with Ana from Support");
    expect(await page.locator('assistant-chat-widget .header .avatar').innerText()).toBe('A');
    await teammateSays(page, 'tm-1', 'Hi, Ana here from support. Which berth is it?');
    await waitForText(parts.assistantBubbles.last(), 'Which berth is it?');
    const teammate = page.locator('assistant-chat-widget .incoming').last();
    expect(await teammate.locator('.sender-name').innerText()).toBe('Ana');
    expect(await teammate.locator('.sender-team').innerText()).toBe('Support');
    expect(await teammate.locator('.sender-avatar').innerText()).toBe('A');
    expect(await teammate.locator('time').innerText()).toMatch(/^\d{1,2}:\d{2}/);
    // Screen readers hear who wrote it, too.
    // Screen readers hear who wrote it and when (issue 29).
    expect(await teammate.locator('.message .sr-only').innerText()).toMatch(/^Ana \(Support\), \d{1,2}:\d{2}\s?(AM|PM)?:$/);
    await saveScreenshot(page, 'widget-teammate');

    // A reload reads who holds the conversation from the service.
    await page.reload();
    await openWidget(page);
    expect(await subtitle(page).innerText()).toBe("You're chatting with Ana from Support");

    await holderIs(page, { kind: 'assistant' });
    await eventually(async () => (await subtitle(page).innerText()) === "You're chatting with our assistant");
    expect(await page.locator('assistant-chat-widget .header .avatar').innerText()).toBe('H');
  });

  test('consecutive messages from one sender are grouped under one line with its time; another sender starts a new group', async () => {
    const page = await visit();
    await openWidget(page);
    await sendAndAwaitReply(page, 'Is berth 12 free?', REPLY);
    await holderIs(page, ANA);
    await teammateSays(page, 'tm-a', 'Let me check.');
    await teammateSays(page, 'tm-b', 'Yes, berth 12 is free.');
    await waitForText(widget(page).assistantBubbles.last(), 'berth 12 is free');
    // The visitor answers twice from another tab (the assistant is quiet while Ana holds the conversation).
    const { conversationId } = await storedVisitor(page, 'presence-site');
    await events.append(conversationId!, 'message', { id: 'visitor-a', role: 'visitor', text: 'Great', at: Date.now() });
    await events.append(conversationId!, 'message', { id: 'visitor-b', role: 'visitor', text: 'I will take it', at: Date.now() });
    await eventually(async () => (await textsOf(widget(page).visitorBubbles)).length === 3);

    // innerText leaves out the "·" separators, which CSS draws.
    expect(await logShape(page)).toEqual([
      { line: 'H Harbour Lane HH:MM', text: 'Hi! How can I help?' }, // the greeting carries a time (issue 35)
      { line: 'You HH:MM', text: 'Is berth 12 free?' },
      { line: 'H Harbour Lane HH:MM', text: REPLY },
      { line: 'A Ana Support HH:MM', text: 'Let me check.' },
      { line: '', text: 'Yes, berth 12 is free.' },
      { line: 'You HH:MM', text: 'Great' },
      { line: '', text: 'I will take it' },
    ]);
    expect(await page.locator('assistant-chat-widget .log > .grouped').count()).toBe(2);
  });
});

describe('what the browser review found', () => {
  test("a page's inherited text-shadow does not reach the widget", async () => {
    const page = await visit();
    const parts = await openWidget(page);
    // The page's own text does have it: the rule is live.
    expect(await computed(page.locator('h1'), 'text-shadow')).toContain('rgb(255, 0, 0)');
    for (const part of [
      parts.assistantBubbles.first(),
      page.locator('assistant-chat-widget .title'),
      parts.input,
      page.locator('assistant-chat-widget .launcher'),
    ]) {
      // An element redrawn between its lookup and the read (the greeting, as the site's settings arrive) has no computed style: read it again.
      expect(await eventually(async () => (await computed(part, 'text-shadow')) || undefined)).toBe('none');
    }
  });

  test('a bare URL followed by "]" is linked without the bracket', async () => {
    harness.models.setScript(() => ({ text: 'The fees are listed here [https://x.test/a] and at https://x.test/a]' }));
    const page = await visit();
    const parts = await openWidget(page);
    await sendAndAwaitReply(page, 'Where are the fees?', 'https://x.test/a]');
    const links = parts.assistantBubbles.last().locator('a');
    expect(await links.count()).toBe(2);
    for (const index of [0, 1]) {
      expect(await links.nth(index).getAttribute('href')).toBe('https://x.test/a');
      expect(await links.nth(index).innerText()).toBe('https://x.test/a');
    }
    expect(await bubbleText(parts.assistantBubbles.last())).toBe('The fees are listed here [https://x.test/a] and at https://x.test/a]');
  });

  test('on a phone the close button is a 44 px target', async () => {
    const page = await visit(MOBILE);
    const parts = await openWidget(page);
    const box = await parts.close.boundingBox();
    expect(box?.width).toBeGreaterThanOrEqual(44);
    expect(box?.height).toBeGreaterThanOrEqual(44);
    expect(await parts.newChat.boundingBox()).toMatchObject({ width: 44, height: 44 });
  });

  test('on a phone the page behind the open panel does not scroll, and scrolls again where it was after closing', async () => {
    const page = await visit(MOBILE);
    await page.evaluate('window.scrollTo(0, 300)');
    await eventually(async () => (await page.evaluate('window.scrollY')) === 300);
    const pageTop = () => page.evaluate("document.getElementById('main').getBoundingClientRect().top") as Promise<number>;
    const before = await pageTop();
    const parts = await openWidget(page);

    // A swipe (wheel) over the header, which cannot scroll itself, would scroll the page.
    const header = await page.locator('assistant-chat-widget .header').boundingBox();
    await page.mouse.move(header!.x + 60, header!.y + header!.height / 2);
    await page.mouse.wheel(0, 800);
    await page.waitForTimeout(400);
    expect(await pageTop()).toBe(before);

    await parts.close.click();
    await parts.dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate('window.scrollY')).toBe(300);
    await page.mouse.wheel(0, 200);
    await eventually(async () => ((await page.evaluate('window.scrollY')) as number) > 300);
  });

  test('on a phone opening the panel does not focus the input (no keyboard pops up); it focuses the dialog', async () => {
    const page = await visit(MOBILE);
    const parts = await openWidget(page);
    const focused = (locator: Locator) => locator.evaluate((element: { matches(selector: string): boolean }) => element.matches(':focus'));
    expect(await focused(parts.input)).toBe(false);
    expect(await focused(parts.dialog)).toBe(true);
    // Tapping into the input still works, and sending keeps the keyboard up for the next message.
    await parts.input.click();
    expect(await focused(parts.input)).toBe(true);
  });
});
