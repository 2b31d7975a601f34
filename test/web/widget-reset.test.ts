/**
 * The widget on a shared computer, in Chromium: a site signs its user out (`ShopChat.reset()` or
 * `ShopChat.identify(null)`) and the conversation ends on this device — its history, session,
 * waiting messages and unread count — and a fresh anonymous one starts; a page signed in as
 * somebody else, or as nobody, never shows the last user's conversation, even with their token
 * still stored.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { createEventLog } from '../../channels/web/event-log.js';
import { DESKTOP, launchBrowser, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { openWidget, startWidgetHost, storedVisitor, textsOf, waitForText, widget, type WidgetHost } from '../support/widget-page.js';

const GREETING = 'Hi! How can I help you today?';
const SECRET = 'reset-identity-secret-0123456789abcdef';
let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;
let origin: string;
/** Holds the answer to "And my invoice?" until the test has closed the panel. */
let releaseInvoice: () => void = () => undefined;

/** A page of the site: signed in as `userId` (signed as docs/widget.md says), or signed out. */
function sitePage(userId: string | undefined): string {
  const ts = Math.floor(Date.now() / 1000);
  const user = userId
    ? `data-user-id="${userId}" data-user-ts="${ts}" data-user-hash="${createHmac('sha256', SECRET)
        .update([userId, '', '', String(ts)].join('\n'))
        .digest('hex')}"`
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main><h1>Shop</h1></main>
<script>window.__events = []; window.ShopChat = window.ShopChat || []; ShopChat.push(['on', 'unread', (count) => __events.push('unread: ' + count)]);</script>
<script src="${origin}/widget.js" data-site-key="reset-site" data-api="ShopChat" ${user} async></script></body></html>`;
}

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: async ({ userText }) => {
      if (userText.includes('invoice')) await new Promise<void>((resolve) => (releaseInvoice = resolve));
      return { text: `Answer to: ${userText.slice(-40)}` };
    },
    env: { WEB_SITES: JSON.stringify([{ key: 'reset-site', name: 'Harbour Lane', origins: [origin], language: 'en', identitySecret: SECRET }]) },
  });
  await harness.services.contacts.upsert({ address: 'user:u-amelia', name: 'Amelia Hart', entities: [{ id: 'acct-77', name: 'Harbour Lane Bakery' }] });
  // Fresh on every request: the hash carries the time the page was rendered.
  host = await startWidgetHost(port, harness.services.app, {
    get '/amelia'() {
      return sitePage('u-amelia');
    },
    get '/bob'() {
      return sitePage('u-bob');
    },
    get '/signed-out'() {
      return sitePage(undefined);
    },
  });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

/** Amelia, signed in, asks about her order and gets the answer; returns her stored visitor. */
async function ameliaTalks(page: Page): Promise<Record<string, string>> {
  await page.goto(`${host.origin}/amelia`);
  const parts = await openWidget(page);
  await parts.input.fill('Where is my order 5001?');
  await parts.input.press('Enter');
  await waitForText(parts.assistantBubbles.last(), 'Answer to: Where is my order 5001?');
  return storedVisitor(page, 'reset-site');
}

async function visibleTexts(page: Page): Promise<string[]> {
  const texts = [...(await textsOf(widget(page).visitorBubbles)), ...(await textsOf(widget(page).assistantBubbles))];
  return texts.filter((text) => text !== GREETING);
}

async function withPage(run: (watched: WatchedPage) => Promise<void>): Promise<void> {
  const watched = await chromium.newPage(DESKTOP);
  try {
    await run(watched);
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}

describe('signing out', () => {
  test.each(['reset()', 'identify(null)'])(
    "ShopChat.%s ends the conversation on this device: no history, a new visitor, no unread, and what is sent next is an anonymous visitor's",
    async (call) =>
      withPage(async ({ page }) => {
        const amelia = await ameliaTalks(page);
        expect(amelia.userId).toBe('u-amelia');
        // A reply arrives while the panel is closed: one unread.
        const parts = widget(page);
        await parts.close.click();
        await page.evaluate(`ShopChat.open()`);
        await parts.input.fill('And my invoice?');
        await parts.input.press('Enter');
        await waitForText(parts.visitorBubbles.last(), 'And my invoice?');
        await page.evaluate(`ShopChat.close()`);
        // Released on every look: the answer's model call may not be waiting yet at the first.
        await eventually(async () => {
          releaseInvoice();
          return (await parts.badge.isVisible()) && (await parts.badge.innerText()) === '1';
        });

        await page.evaluate(`ShopChat.${call}`);

        // At once: the panel and its conversation are gone, and so is the unread count.
        await eventually(async () => (await parts.badge.count()) === 0 || !(await parts.badge.isVisible()));
        expect(await page.title()).toBe('Shop');
        expect(await page.evaluate('__events')).toContain('unread: 0');
        const fresh = await eventually(async () => {
          const stored = await storedVisitor(page, 'reset-site').catch(() => undefined);
          return stored?.token && stored.visitorId !== amelia.visitorId ? stored : undefined;
        });
        expect(fresh.conversationId).not.toBe(amelia.conversationId);
        expect(fresh.userId).toBeUndefined();

        await openWidget(page);
        expect(await visibleTexts(page)).toEqual([]);
        await parts.input.fill('Who am I?');
        await parts.input.press('Enter');
        await waitForText(parts.assistantBubbles.last(), 'Answer to: Who am I?');
        expect(await visibleTexts(page)).toEqual(['Who am I?', 'Answer to: Who am I?']);

        // The service agrees: the new token's history is the new conversation's alone.
        const history = await harness.http.get('/api/widget/history').set('Origin', origin).set('Authorization', `Bearer ${fresh.token}`);
        expect(history.body.messages.map((message: { text: string }) => message.text)).toEqual(['Who am I?', 'Answer to: Who am I?']);
      }),
  );
});

describe('signing out with a message still waiting', () => {
  test('the waiting message is dropped: never sent, in either conversation', async () =>
    withPage(async ({ page }) => {
      const amelia = await ameliaTalks(page);
      const parts = widget(page);
      let down = true;
      await page.route('**/api/widget/messages', (route) => (down ? route.abort('connectionrefused') : route.continue()));
      await parts.input.fill('Cancel my standing order');
      await parts.input.press('Enter');
      await eventually(async () => (await page.locator('assistant-chat-widget .delivery.waiting').count()) === 1);

      await page.evaluate('ShopChat.reset()');
      const fresh = await eventually(async () => {
        const stored = await storedVisitor(page, 'reset-site').catch(() => undefined);
        return stored?.token && stored.visitorId !== amelia.visitorId ? stored : undefined;
      });
      down = false;
      await openWidget(page);
      expect(await visibleTexts(page)).toEqual([]);
      await parts.input.fill('Hello');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'Answer to: Hello');
      const texts = async (token: string) =>
        ((await harness.http.get('/api/widget/history').set('Origin', origin).set('Authorization', `Bearer ${token}`)).body.messages as { text: string }[]).map(
          (message) => message.text,
        );
      expect(await texts(fresh.token!)).toEqual(['Hello', 'Answer to: Hello']);
      expect(await texts(amelia.token!)).not.toContain('Cancel my standing order');
    }));
});

describe('signing out while the history is being read', () => {
  test("the last user's conversation never streams into the page afterwards (no reply, unread or preview of theirs)", async () =>
    withPage(async ({ page }) => {
      const amelia = await ameliaTalks(page);
      const events = createEventLog(harness.services.redis);
      // Amelia follows her conversation: the next page reads its history at once. Held until she has signed out.
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let heldToken: string | undefined;
      let released = false;
      await page.route('**/api/widget/history', async (route) => {
        if (!released) {
          heldToken = route.request().headers().authorization;
          await held;
        }
        await route.continue();
      });
      await page.goto(`${host.origin}/amelia`);
      await eventually(() => heldToken !== undefined);
      await page.evaluate(`window.__heard = []; ShopChat.on('message', (message) => __heard.push(message.text)); ShopChat.reset()`);
      const fresh = await eventually(async () => {
        const stored = await storedVisitor(page, 'reset-site').catch(() => undefined);
        return stored?.token && stored.visitorId !== amelia.visitorId ? stored : undefined;
      });
      released = true;
      release();

      const history = page.waitForResponse(
        (response) => response.url().includes('/api/widget/history') && response.request().headers().authorization !== heldToken,
      );
      await openWidget(page);
      await history;
      // Both conversations get a reply on every look, until the new one's has been heard twice.
      let round = 0;
      await eventually(async () => {
        round += 1;
        await events.append(amelia.conversationId!, 'message', { id: `out:leak-${round}:0`, role: 'assistant', text: 'Your card ends 4242.', at: Date.now() });
        await events.append(fresh.conversationId!, 'message', { id: `out:fresh-${round}:0`, role: 'assistant', text: 'Welcome!', at: Date.now() });
        return ((await page.evaluate('__heard')) as string[]).filter((text) => text === 'Welcome!').length >= 2;
      });
      expect(await page.evaluate('__heard')).not.toContain('Your card ends 4242.');
      expect(await visibleTexts(page)).not.toContain('Your card ends 4242.');
    }));
});

describe('a page signed in as somebody else, or as nobody', () => {
  test.each(['/signed-out', '/bob'])('%s with the last user’s token still stored never shows their conversation', async (path) =>
    withPage(async ({ page }) => {
      const amelia = await ameliaTalks(page);
      await page.goto(`${host.origin}${path}`);
      const stored = await eventually(async () => {
        const visitor = await storedVisitor(page, 'reset-site').catch(() => undefined);
        return visitor?.token && visitor.visitorId !== amelia.visitorId ? visitor : undefined;
      });
      expect(stored.conversationId).not.toBe(amelia.conversationId);
      await openWidget(page);
      expect(await visibleTexts(page)).toEqual([]);
      // And back on Amelia's page her conversation is not resumed from a token of someone else's either.
      await page.goto(`${host.origin}/amelia`);
      await openWidget(page);
      expect(await visibleTexts(page)).toEqual([]);
    }),
  );

  test('the service itself refuses the last user’s conversation to a signed-out page presenting their token', async () =>
    withPage(async ({ page }) => {
      const amelia = await ameliaTalks(page);
      const renewed = await harness.http.post('/api/widget/session').set('Origin', origin).send({ siteKey: 'reset-site', token: amelia.token });
      expect(renewed.status).toBe(200);
      expect(renewed.body.conversationId).not.toBe(amelia.conversationId);
      expect(renewed.body.visitorId).not.toBe(amelia.visitorId);
    }));
});
