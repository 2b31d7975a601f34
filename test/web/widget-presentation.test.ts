/**
 * The widget's presentation, in Chromium: a question drawn with buttons says its answers once
 * (no numbered list, no "Reply 1 or yes" hint in the bubble); every element Tab reaches has a
 * focus ring ≥ 2 px at ≥ 3:1 against what is around it, in the light and the dark palette, links
 * in a reply ≥ 4.5:1 against the bubble, inline code on a background of its own, used answer
 * buttons ≥ 3:1 (not faded); code blocks monospaced without their fences and previews plain; a
 * message the service answers with a 5xx reads as a problem sending (not "Reconnecting…"), one
 * that gets no answer waits muted, and only one given up on is red with Retry; on a phone the open
 * panel is a modal (page inert, Tab kept inside, focus back on the launcher when it closes).
 * Questions reach the widget as the web channel writes them: events in its event log.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { createEventLog, type EventLog } from '../../channels/web/event-log.js';
import { launchBrowser, MOBILE, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, hostPage, openWidget, startWidgetHost, storedVisitor, waitForText, type WidgetHost } from '../support/widget-page.js';

/** How long the widget's outbox waits for the service before it gives up on a message (GIVE_UP_MS, widget/outbox.ts). */
const GIVE_UP_MS = 120_000;
const CODE_REPLY = 'Run this:\n```sh\nnpm start\n```\nThen **enjoy**.';
const CONFIRMATION =
  'Please confirm: Reschedule a delivery\n• New delivery date: 2026-12-05\n\n1. Confirm\n2. Cancel\nReply 1 or "yes" to confirm, 2 or "no" to cancel.';
const YES_NO = [
  { id: 'act:test:confirm', label: 'Confirm' },
  { id: 'act:test:cancel', label: 'Cancel' },
];

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;
let events: EventLog;
let asked = 0;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: ({ userText }) => (userText.includes('code please') ? { text: CODE_REPLY } : { text: `Answer to: ${userText.slice(-30)}` }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, {
    '/light': hostPage(origin, 'data-site-key="test-site"'),
    '/dark': hostPage(origin, 'data-site-key="test-site" data-theme="dark"'),
    '/phone': `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Shop</title></head>
<body><main><h1>Shop</h1><a href="#deals">Deals</a></main><script src="${origin}/widget.js" data-site-key="test-site" async></script></body></html>`,
  });
  events = createEventLog(harness.services.redis);
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

/** Opens the widget on `path` and has one exchange, so its event stream is up. */
async function chat(watched: WatchedPage, path: string) {
  const { page } = watched;
  await page.goto(`${host.origin}${path}`);
  const parts = await openWidget(page);
  await parts.input.fill('hello there');
  await parts.send.click();
  await waitForText(parts.assistantBubbles.last(), 'Answer to: hello there');
  return parts;
}

/** The web channel's message event, as it writes a reply (with a question's answers when given). */
async function reply(page: Page, text: string, choices?: typeof YES_NO): Promise<void> {
  asked += 1;
  const { conversationId } = await storedVisitor(page);
  await events.append(conversationId!, 'message', { id: `out:test-${asked}:0`, role: 'assistant', text, ...(choices ? { choices } : {}), at: Date.now() });
}

interface Rgb {
  r: number;
  g: number;
  b: number;
}

function contrast(first: Rgb, second: Rgb): number {
  const luminance = ({ r, g, b }: Rgb): number => {
    const linear = (value: number): number => (value / 255 <= 0.03928 ? value / 255 / 12.92 : ((value / 255 + 0.055) / 1.055) ** 2.4);
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  };
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

/**
 * In the page: colours of `selector`'s (or the focused element's) styles, and the opaque
 * background around it — its own for a ring drawn inside it (negative offset), its parent's otherwise.
 */
const READ_STYLES = `(selector) => {
  const root = document.querySelector('assistant-chat-widget').shadowRoot;
  const node = selector ? root.querySelector(selector) : document.activeElement === root.host ? root.activeElement : null;
  if (!node) return null;
  const parse = (value) => {
    const match = /rgba?\\(([^)]+)\\)/.exec(value);
    if (!match) return null;
    const [r, g, b, a = 1] = match[1].split(/[\\s,/]+/).filter(Boolean).map(Number);
    return { r, g, b, a };
  };
  const up = (element) => element.parentElement ?? (element.parentNode instanceof ShadowRoot ? element.parentNode.host : null);
  const background = (start) => {
    for (let element = start; element; element = up(element)) {
      const colour = parse(getComputedStyle(element).backgroundColor);
      if (colour && colour.a > 0.5) return colour;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  let opacity = 1;
  for (let element = node; element; element = up(element)) opacity *= Number(getComputedStyle(element).opacity);
  const style = getComputedStyle(node);
  return {
    name: (node.getAttribute('aria-label') || node.getAttribute('title') || node.textContent || node.className || node.tagName).slice(0, 30),
    outline: style.outlineStyle === 'none' ? null : { width: parseFloat(style.outlineWidth), colour: parse(style.outlineColor) },
    around: parseFloat(style.outlineOffset) < 0 ? background(node) : background(up(node)),
    colour: parse(style.color),
    background: background(node),
    fontFamily: style.fontFamily,
    opacity,
  };
}`;

interface Styles {
  name: string;
  outline: { width: number; colour: Rgb } | null;
  around: Rgb;
  colour: Rgb;
  background: Rgb;
  fontFamily: string;
  opacity: number;
}

const stylesOf = (page: Page, selector?: string) => page.evaluate(`(${READ_STYLES})(${JSON.stringify(selector ?? null)})`) as Promise<Styles | null>;

test('a question drawn with buttons shows the question only: no numbered list, no "Reply 1 or yes" hint', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    const parts = await chat(watched, '/light');
    await reply(page, CONFIRMATION, YES_NO);
    const answers = page.getByRole('group', { name: 'Answers' });
    await answers.waitFor({ state: 'visible', timeout: 10_000 });
    const bubble = parts.assistantBubbles.last();
    const text = await bubbleText(bubble);
    expect(text).toContain('Please confirm: Reschedule a delivery');
    expect(text).toContain('New delivery date: 2026-12-05');
    expect(text).not.toContain('Reply 1');
    expect(await bubble.locator('ol').count()).toBe(0);
    expect(await bubble.locator('li').allTextContents()).toEqual(['New delivery date: 2026-12-05']);
    expect(await answers.getByRole('button').allTextContents()).toEqual(['Confirm', 'Cancel']);
    // The same from the history after a reload (the stored text keeps the list, as WhatsApp and a typed answer need it).
    const { conversationId } = await storedVisitor(page);
    const transcripts = harness.services.transcripts;
    const recent = await transcripts.recent(conversationId!);
    await transcripts.saveRecent(conversationId!, [...recent, { id: `out:test-${asked}:0`, direction: 'outbound', text: CONFIRMATION }]);
    await page.reload();
    const reloaded = await openWidget(page);
    await page.getByRole('group', { name: 'Answers' }).waitFor({ state: 'visible', timeout: 10_000 });
    expect(await bubbleText(reloaded.assistantBubbles.last())).toBe(text);
    expect(await reloaded.assistantBubbles.last().locator('ol').count()).toBe(0);

    // A reply without buttons keeps a numbered list it writes.
    await reply(page, 'Steps:\n1. Confirm\n2. Cancel');
    await eventually(async () => (await reloaded.assistantBubbles.last().locator('li').count()) === 2);
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 60_000);

describe.each(['light', 'dark'])('the %s palette', (palette) => {
  test('every element Tab reaches has a ring ≥ 2 px at ≥ 3:1; links ≥ 4.5:1 on the bubble; code on its own background; used answers ≥ 3:1', async () => {
    const watched = await chromium.newPage(undefined, { colorScheme: palette === 'dark' ? 'dark' : 'light' });
    try {
      const { page } = watched;
      const parts = await chat(watched, `/${palette}`);
      await reply(page, 'See https://harbour.example/help for `your code`.\n\n1. Confirm\n2. Cancel\nReply 1 or "yes".', YES_NO);
      await page.getByRole('group', { name: 'Answers' }).waitFor({ state: 'visible', timeout: 10_000 });

      // Tab from the "New chat" button (reached by keyboard) through the whole panel.
      await parts.newChat.focus();
      await page.keyboard.press('Tab');
      await page.keyboard.press('Shift+Tab');
      const seen = new Map<string, Styles>();
      for (let step = 0; step < 14; step += 1) {
        const styles = await stylesOf(page);
        if (styles) seen.set(styles.name, styles);
        await page.keyboard.press('Tab');
      }
      expect([...seen.keys()]).toEqual(
        expect.arrayContaining([
          'New chat',
          'Close chat',
          'Conversation',
          'https://harbour.example/help',
          'Confirm',
          'Cancel',
          'Attach a photo or PDF',
          'input',
          'Send',
        ]),
      );
      // "New chat" asks first: its Start over and Cancel, by keyboard.
      await parts.newChat.focus();
      await page.keyboard.press('Enter');
      await parts.confirmNewChat.waitFor({ state: 'visible' });
      for (const key of ['Start over', 'Cancel']) {
        const styles = (await stylesOf(page))!;
        expect(styles.name).toBe(key);
        seen.set(styles.name, styles);
        await page.keyboard.press('Tab');
      }
      await page.keyboard.press('Escape');
      await parts.confirmNewChat.waitFor({ state: 'hidden' });
      for (const styles of seen.values()) {
        expect({ name: styles.name, ring: Boolean(styles.outline && styles.outline.width >= 2) }).toEqual({ name: styles.name, ring: true });
        expect({ name: styles.name, contrast: contrast(styles.outline!.colour, styles.around) >= 3 }).toEqual({ name: styles.name, contrast: true });
      }

      const link = (await stylesOf(page, '.message.assistant a'))!;
      expect(contrast(link.colour, link.background)).toBeGreaterThanOrEqual(4.5);
      const code = (await stylesOf(page, '.message.assistant code'))!;
      const bubble = (await stylesOf(page, '.message.assistant:has(code)'))!;
      expect(code.background).not.toEqual(bubble.background);
      expect(contrast(code.colour, code.background)).toBeGreaterThanOrEqual(4.5);

      // A newer message makes the question stale: its buttons are used up, and still readable.
      await reply(page, 'Anything else?');
      await eventually(() => parts.assistantBubbles.last().getByText('Anything else?').isVisible());
      const used = (await stylesOf(page, '.choices button:disabled'))!;
      expect(used.opacity).toBe(1);
      expect(contrast(used.colour, used.background)).toBeGreaterThanOrEqual(3);
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 60_000);
});

test('code blocks are monospaced, without their fences; the launcher preview and the page title are plain text', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    const parts = await chat(watched, '/light');
    await parts.input.fill('code please');
    await parts.send.click();
    await waitForText(parts.assistantBubbles.last(), 'Then enjoy.');
    const bubble = parts.assistantBubbles.last();
    expect(await bubbleText(bubble)).not.toContain('```');
    expect(await bubble.locator('pre code').textContent()).toBe('npm start');
    expect((await stylesOf(page, '.message.assistant pre code'))!.fontFamily).toMatch(/monospace/);

    await parts.close.click();
    await reply(page, '**Good news:** your `order` is ready.');
    const preview = page.locator('assistant-chat-widget .launcher-preview');
    await preview.waitFor({ state: 'visible' });
    expect(await preview.textContent()).toBe('Good news: your order is ready.');
    await eventually(async () => (await page.title()) === '(1) Shop');
  } finally {
    await watched.close();
  }
}, 60_000);

test('a 5xx reads as a problem sending, no answer waits muted, and only a message given up on is red with Retry', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    await page.clock.install();
    const parts = await chat(watched, '/light');
    let failWith: 'status' | 'network' | undefined = 'status';
    const refused: string[] = [];
    await page.route('**/api/widget/messages', async (route) => {
      if (failWith === undefined) return route.continue();
      refused.push(failWith);
      if (failWith === 'network') return route.abort('connectionrefused');
      return route.fulfill({
        status: 503,
        headers: { 'Access-Control-Allow-Origin': host.origin },
        contentType: 'application/json',
        body: '{"error":"unavailable"}',
      });
    });
    const delivery = page.locator('assistant-chat-widget .delivery').last();
    const bubble = parts.visitorBubbles.last();
    const connection = page.locator('assistant-chat-widget .connection');
    const retry = page.getByRole('button', { name: 'Retry', exact: true });

    await parts.input.fill('Is the fuel dock open?');
    await parts.input.press('Enter');
    await eventually(async () => (await delivery.innerText()).includes('There was a problem sending this. Trying again…'));
    expect(await connection.textContent()).toBe('');
    expect(await retry.count()).toBe(0);
    expect(await bubble.getAttribute('class')).not.toContain('failed');

    // No answer at all: the one muted waiting state (the service may be reconnecting), still no red, no Retry.
    failWith = 'network';
    await page.clock.fastForward(20_000);
    await eventually(async () => (await delivery.innerText()).includes('Not sent yet. It will be sent when the connection is back.'), 15_000);
    expect(await retry.count()).toBe(0);
    expect(await bubble.getAttribute('class')).not.toContain('failed');
    expect(await delivery.getAttribute('class')).not.toContain('failed');

    // Given up on: red, with Retry, which sends it (the same message) once the service answers.
    await page.clock.fastForward(GIVE_UP_MS);
    await eventually(() => retry.isVisible(), 15_000);
    expect(await delivery.innerText()).toContain('Not sent.');
    expect(await bubble.getAttribute('class')).toContain('failed');
    failWith = undefined;
    await retry.click();
    await waitForText(parts.assistantBubbles.last(), 'Answer to: Is the fuel dock open?', 15_000);
    expect(refused).toContain('network');
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 90_000);

test('on a phone the open panel is a modal: the page is inert, Tab stays inside, and closing returns focus to the launcher', async () => {
  const watched = await chromium.newPage(MOBILE, { touch: true });
  try {
    const { page } = watched;
    await page.goto(`${host.origin}/phone`);
    const parts = await openWidget(page);
    expect(await parts.dialog.getAttribute('aria-modal')).toBe('true');
    expect(await page.evaluate('document.querySelector("main").inert')).toBe(true);
    const insideWidget = 'document.activeElement === document.querySelector("assistant-chat-widget")';
    for (let step = 0; step < 12; step += 1) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(insideWidget)).toBe(true);
    }
    for (let step = 0; step < 4; step += 1) {
      await page.keyboard.press('Shift+Tab');
      expect(await page.evaluate(insideWidget)).toBe(true);
    }
    await parts.close.click();
    await parts.launcher.waitFor({ state: 'visible' });
    await eventually(
      async () => (await page.evaluate('document.querySelector("assistant-chat-widget").shadowRoot.activeElement?.getAttribute("aria-label")')) === 'Open chat',
    );
    expect(await page.evaluate('document.querySelector("main").inert')).toBe(false);
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 60_000);
