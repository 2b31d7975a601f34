/**
 * The site's data on a conversation, end to end in Chromium against the real service (Redis,
 * FerretDB, the worker, the deterministic model): a page queues `ShopChat.setData(...)` before the
 * widget loads, the visitor chats, and the teammate's transcript page shows the data as the
 * website's word (escaped, marked not verified) while no model call ever saw it. A payload out of
 * bounds is refused by the route with a 400 and a log line (and the widget tells the site's
 * developer in the console), leaving the stored data as it was. A new chat carries the data too.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { openWidget, storedVisitor, waitForText } from '../support/widget-page.js';

const SITE = 'data-site';
const REPLY = 'Visitor berths cost £28 a night.';
// Values no prompt could hold by chance: any sighting in a model call is the data leaking.
const DATA = { plan: 'Gold <b>tier</b> QX71', cart_total: 42.5, note: '</dd><script>alert("zq93")</script>' };
const SHOWN = { plan: 'Gold <b>tier</b> QX71', cart_total: '42.5', note: '</dd><script>alert("zq93")</script>' };

let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: () => ({ text: REPLY }),
    env: { WEB_SITES: JSON.stringify([{ key: SITE, name: 'Harbour Lane', origins: [origin], greeting: 'Hi! How can I help?', language: 'en' }]) },
  });
  const app = harness.services.app;
  server = createServer((request, response) => {
    if (request.url === '/host/page') {
      response
        .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
        .end(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Harbour Lane</title></head><body><h1>Moorings</h1>` +
            `<script>window.ShopChat = window.ShopChat || []; ShopChat.push(['setData', ${JSON.stringify(DATA).replace(/</g, '\\u003c')}]);</script>` +
            `<script src="${origin}/widget.js" data-site-key="${SITE}" data-api="ShopChat" async></script></body></html>`,
        );
    } else if (request.url === '/favicon.ico') response.writeHead(204).end();
    else app(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  for (const watched of pages) await watched.close();
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await harness?.close();
});

async function say(chat: Awaited<ReturnType<typeof openWidget>>, text: string, replies: number): Promise<void> {
  await chat.input.fill(text);
  await chat.input.press('Enter');
  await eventually(async () => (await chat.assistantBubbles.count()) >= replies);
  await waitForText(chat.assistantBubbles.last(), REPLY);
}

/** The transcript page's site data as a teammate reads it (key → value), once the writer stored it. */
async function shownData(watched: WatchedPage, conversationId: string): Promise<Record<string, string>> {
  const link = new URL(harness.services.transcriptLinks.url(conversationId));
  const page = watched.page;
  let shown: Record<string, string> = {};
  await eventually(async () => {
    await page.goto(`${origin}${link.pathname}${link.search}`);
    const keys = await page.locator('#site-data dt').allInnerTexts();
    const values = await page.locator('#site-data dd').allInnerTexts();
    shown = Object.fromEntries(keys.map((key, index) => [key, values[index] ?? '']));
    return keys.length > 0;
  });
  return shown;
}

describe("the site's data on a conversation", () => {
  test('is shown to teammates escaped and marked not verified, never reaches the model, and a bad payload is refused', async () => {
    const visitorTab = await chromium.newPage(DESKTOP);
    pages.push(visitorTab);
    const visitor = visitorTab.page;
    await visitor.goto(`${origin}/host/page`);
    const chat = await openWidget(visitor);
    await say(chat, 'How much is a visitor berth?', 1);
    // A second turn: the first one is now history the model is given.
    await say(chat, 'And for a week?', 2);
    const { conversationId, token } = await storedVisitor(visitor, SITE);

    // (a) The teammate sees it, each value as text (no markup from it), labelled as the website's word.
    const teammate = await chromium.newPage(DESKTOP);
    pages.push(teammate);
    expect(await shownData(teammate, conversationId!)).toEqual(SHOWN);
    expect(await teammate.page.locator('#site-data-title').innerText()).toBe('Provided by the website, not verified');
    expect(await teammate.page.locator('#site-data b, #site-data script').count()).toBe(0);
    expect(teammate.record.dialogs).toEqual([]);

    // (b) No model call saw a key's value: not in the system prompt, the history or the facts.
    const calls = harness.models.calls;
    expect(calls.filter((call) => !call.structured).length).toBeGreaterThanOrEqual(2);
    for (const call of calls) {
      expect(call.promptText).not.toContain('QX71');
      expect(call.promptText).not.toContain('zq93');
      expect(call.promptText).not.toContain('cart_total');
    }
    const recent = JSON.stringify(await harness.services.transcripts.recent(conversationId!));
    expect(recent).toContain('And for a week?');
    expect(recent).not.toContain('QX71');

    // (c) Out of bounds: refused by the route with what is wrong, and a log line.
    // Sent as JSON text: a `__proto__` key survives only there.
    const refused = async (data: unknown) =>
      harness.http
        .post('/api/widget/data')
        .set('Origin', origin)
        .set('Authorization', `Bearer ${token!}`)
        .set('Content-Type', 'application/json')
        .send(typeof data === 'string' ? `{"data":${data}}` : JSON.stringify({ data }));
    const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, index) => [`key_${index}`, 'x']));
    for (const [data, error] of [
      [{ 'Bad Key': 'x' }, 'data.Bad Key: a key is 1–40 characters of a-z, 0-9 or _, starting with a letter or digit'],
      ['{"__proto__":"x"}', 'data.__proto__: a key is 1–40 characters of a-z, 0-9 or _, starting with a letter or digit'],
      [{ note: 'x'.repeat(201) }, 'data.note: Too big: expected string to have <=200 characters'],
      [{ total: 42 }, 'data.total: Invalid input: expected string, received number'],
      [tooMany, 'data: at most 20 keys'],
    ] as const) {
      const response = await refused(data);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error });
    }
    expect(harness.logs.filter((line) => line.event === 'widget-request-rejected' && line.reason === 'malformed_site_data')).toHaveLength(5);

    // The script API with a bad key: the site's developer reads why in the console; the data stays.
    await visitor.evaluate(`window.ShopChat.setData({ 'Not OK': 'x' })`);
    await eventually(async () => visitorTab.record.console.some((entry) => entry.text.includes('setData was refused: data.Not OK')));
    expect(await shownData(teammate, conversationId!)).toEqual(SHOWN);

    // "New chat": the data goes with the new conversation's first message too.
    await chat.newChat.click();
    await chat.confirmNewChat.click();
    await eventually(async () => (await storedVisitor(visitor, SITE)).conversationId !== conversationId);
    await say(chat, 'Is there water on the pontoon?', 1);
    const next = (await storedVisitor(visitor, SITE)).conversationId!;
    expect(await shownData(teammate, next)).toEqual(SHOWN);
  });
});
