/**
 * The web channel's takeover end to end, in two Chromium contexts against the real service
 * (Redis, FerretDB, the worker, the fake Twilio API for the team's notices): a visitor asks
 * for a person and is handed to support; the teammate opens the transcript link's live page,
 * takes over and replies; the visitor's widget shows the teammate's name and "You're chatting
 * with Ana from Support"; the visitor's next message appears on the live page without a reload
 * and the assistant says nothing; "Hand back to the assistant" tells the visitor, and the
 * assistant answers the next message. Taken over from the teammate's WhatsApp instead, the
 * widget shows the teammate's name and subtitle (also after a reload), and a photo the visitor
 * attaches reaches the teammate's WhatsApp as media and shows inline on the live page. The teammate message → visitor time (click on Send to
 * the bubble in the widget, and queued to sent through the pipeline) is written to
 * test-artifacts/takeover-latency.json (figures, not assertions).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, saveScreenshot, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { eventually, PUBLIC_BASE_URL, startHarness, type Harness } from '../support/harness.js';
import { PNG_BYTES } from '../support/media-fixtures.js';
import { bubbleText, openWidget, storedVisitor, textsOf, waitForText, widget } from '../support/widget-page.js';
import { findFreePort } from '../support/services.js';

const SITE = 'takeover-site';
const ANA = { name: 'Ana', whatsapp: 'whatsapp:+447700900601' };
const HANDED_OVER = 'Someone from our support team will be with you here shortly.';
const ASSISTANT = 'The assistant is back: visitor berths cost £28 a night.';

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
    script: (call) => {
      if (call.toolResults.length > 0) return { text: HANDED_OVER };
      if (/a person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
        return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Broken mooring line, wants a person', email: 'sam@example.com' } }] };
      }
      return { text: ASSISTANT };
    },
    env: {
      WEB_SITES: JSON.stringify([{ key: SITE, name: 'Harbour Lane', origins: [origin], greeting: 'Hi! How can I help?', language: 'en' }]),
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support', members: [ANA] } }),
    },
  });
  const app = harness.services.app;
  server = createServer((request, response) => {
    if (request.url === '/host/page') {
      response
        .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
        .end(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Harbour Lane</title></head><body><h1>Moorings</h1><script src="${origin}/widget.js" data-site-key="${SITE}" async></script></body></html>`,
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

async function newPage(): Promise<Page> {
  const watched = await chromium.newPage(DESKTOP);
  pages.push(watched);
  return watched.page;
}

/** The live page's parts, as a teammate finds them. */
function livePage(page: Page) {
  return {
    state: page.locator('#state'),
    live: page.locator('#live'),
    name: page.getByLabel('You are'),
    take: page.getByRole('button', { name: 'Take over' }),
    handBack: page.getByRole('button', { name: 'Hand back to the assistant' }),
    reply: page.getByLabel(/Reply to the customer/),
    send: page.getByRole('button', { name: 'Send' }),
    notice: page.locator('#notice'),
    messages: page.locator('#log li'),
  };
}

async function visitorSays(page: Page, text: string): Promise<void> {
  const parts = widget(page);
  await parts.input.fill(text);
  await parts.input.press('Enter');
  await waitForText(parts.visitorBubbles.last(), text);
}

describe('a visitor handed to support, a teammate on the live page', () => {
  test('takes over, replies with their name shown, sees the visitor live with the assistant silent, and hands back', async () => {
    const visitor = await newPage();
    await visitor.goto(`${origin}/host/page`);
    const chat = await openWidget(visitor);
    await visitorSays(visitor, 'My mooring line broke, I need a person please');
    await waitForText(chat.assistantBubbles.last(), HANDED_OVER);
    const { conversationId } = await storedVisitor(visitor, SITE);

    // The link the notice carries, opened on this test's origin.
    const link = new URL(harness.services.transcriptLinks.url(conversationId!));
    const teammate = await newPage();
    await teammate.goto(`${origin}${link.pathname}${link.search}`);
    const live = livePage(teammate);
    await eventually(async () => (await live.live.innerText()).startsWith('Live'));
    expect(await live.state.innerText()).toBe('Handed to Support: the assistant still answers until someone takes over.');
    const { handoff } = JSON.parse((await teammate.locator('#live-config').textContent()) ?? '{}') as { handoff: { id: string } };
    await live.name.selectOption('Ana');
    await live.take.click();
    await eventually(async () => (await live.state.innerText()) === 'Ana has this conversation; the assistant is silent.');
    await eventually(async () => (await visitor.locator('assistant-chat-widget .subtitle').innerText()) === "You're chatting with Ana from Support");

    const started = Date.now();
    await live.reply.fill('Hi, Ana here. Which berth are you on?');
    await live.send.click();
    await waitForText(chat.assistantBubbles.last(), 'Which berth are you on?');
    const latencyMs = Date.now() - started;
    const fromAna = visitor.locator('assistant-chat-widget .incoming').last();
    expect(await fromAna.locator('.sender-name').innerText()).toBe('Ana');
    expect(await fromAna.locator('.sender-team').innerText()).toBe('Support');
    expect(await live.reply.inputValue()).toBe('');
    await eventually(async () => (await textsOf(live.messages.locator('.text'))).includes('Hi, Ana here. Which berth are you on?'));

    // The visitor answers: it appears on the live page without a reload; the assistant says nothing.
    const replyCalls = harness.models.replyCalls().length;
    const assistantBubbles = await chat.assistantBubbles.count();
    await visitorSays(visitor, 'Berth 14 on the east quay');
    await eventually(async () => (await textsOf(live.messages.locator('.text'))).includes('Berth 14 on the east quay'));
    expect(await live.messages.last().getAttribute('class')).toBe('customer');
    await saveScreenshot(teammate, 'live-page-taken');
    await visitor.waitForTimeout(1_000);
    expect(harness.models.replyCalls().length).toBe(replyCalls);
    expect(await chat.assistantBubbles.count()).toBe(assistantBubbles);

    // Hand back: the visitor is told, the header says the assistant again, and the assistant answers.
    await live.handBack.click();
    await eventually(async () => (await live.state.innerText()).startsWith('No open hand-off'));
    await waitForText(chat.assistantBubbles.last(), "You're back with our assistant");
    await eventually(async () => (await visitor.locator('assistant-chat-widget .subtitle').innerText()) === "You're chatting with our assistant");
    // Every action is recorded with who did it, from where.
    expect(await harness.services.takeover.get(handoff.id)).toMatchObject({
      status: 'handed_back',
      takenBy: { name: 'Ana', via: 'page', id: ANA.whatsapp },
      endedBy: { name: 'Ana', via: 'page' },
      endReason: 'page',
    });
    await visitorSays(visitor, 'How much is a visitor berth?');
    await waitForText(chat.assistantBubbles.last(), ASSISTANT);
    expect(await bubbleText(chat.assistantBubbles.last())).toBe(ASSISTANT);
    await saveScreenshot(visitor, 'widget-after-hand-back');

    // A reload reads the same from the service: Ana's message under her name, as she wrote it, and no note meant for the model.
    await visitor.reload();
    const reloaded = await openWidget(visitor);
    await waitForText(reloaded.assistantBubbles.last(), ASSISTANT);
    const texts = await textsOf(reloaded.assistantBubbles);
    expect(texts).toContain('Hi, Ana here. Which berth are you on?');
    expect(texts.join('\n')).not.toMatch(/Summary|\[Ana, Support\]/);
    const anaAgain = visitor.locator('assistant-chat-widget .incoming', { hasText: 'Which berth are you on?' });
    expect(await anaAgain.locator('.sender-name').innerText()).toBe('Ana');

    // The figure for the report.
    await mkdir(new URL('../../test-artifacts/', import.meta.url), { recursive: true });
    await writeFile(
      new URL('../../test-artifacts/takeover-latency.json', import.meta.url),
      `${JSON.stringify({ teammateToVisitorMs: latencyMs, queuedToSentMs: harness.logs.find((line) => line.event === 'takeover-reply-sent')?.latencyMs })}\n`,
    );
    for (const watched of pages) {
      expect(watched.record.pageErrors).toEqual([]);
      expect(watched.record.offHostRequests).toEqual([]);
      expect(watched.record.console).toEqual([]);
    }
  }, 90_000);

  test("taken over from the teammate's WhatsApp: the widget shows their name and the subtitle, also after a reload; the visitor's photo reaches them as media and shows on the live page", async () => {
    const visitor = await newPage();
    await visitor.goto(`${origin}/host/page`);
    const chat = await openWidget(visitor);
    await visitorSays(visitor, 'The cleat came off, I need a person');
    await waitForText(chat.assistantBubbles.last(), HANDED_OVER);
    const { conversationId } = await storedVisitor(visitor, SITE);
    const [handoff] = (await harness.services.handoffs.list({ limit: 10 })).filter((candidate) => candidate.conversationId === conversationId);
    expect(handoff?.shortCode).toBeDefined();
    const link = new URL(harness.services.transcriptLinks.url(conversationId!));
    const teammate = await newPage();
    await teammate.goto(`${origin}${link.pathname}${link.search}`);
    const live = livePage(teammate);
    await eventually(async () => (await live.live.innerText()).startsWith('Live'));

    // Ana answers from her WhatsApp with the notice's code: the widget names her and says who the visitor is chatting with.
    const modelCalls = harness.models.calls.length;
    await harness.sendWhatsapp({ from: ANA.whatsapp, body: `#${handoff!.shortCode} Ana here. Which berth?` });
    await waitForText(chat.assistantBubbles.last(), 'Ana here. Which berth?');
    const fromAna = visitor.locator('assistant-chat-widget .incoming').last();
    expect(await fromAna.locator('.sender-name').innerText()).toBe('Ana');
    expect(await fromAna.locator('.sender-team').innerText()).toBe('Support');
    await eventually(async () => (await visitor.locator('assistant-chat-widget .subtitle').innerText()) === "You're chatting with Ana from Support");
    // The live page hears who took it, though nobody clicked "Take over" there.
    await eventually(async () => (await live.state.innerText()) === 'Ana has this conversation; the assistant is silent.');

    // The visitor attaches a photo: Ana gets it on WhatsApp as media, the live page shows it inline without a reload.
    const [chooser] = await Promise.all([
      visitor.waitForEvent('filechooser'),
      visitor.getByRole('button', { name: 'Attach a photo or PDF', exact: true }).click(),
    ]);
    await chooser.setFiles({ name: 'cleat.png', mimeType: 'image/png', buffer: PNG_BYTES });
    await visitor.locator('assistant-chat-widget .attachment.ready').waitFor({ state: 'visible' });
    await visitorSays(visitor, 'This is the cleat');
    const relayed = await eventually(() =>
      harness.twilio.messages.find((message) => message.to === ANA.whatsapp && message.body.startsWith('Customer (photo): This is the cleat')),
    );
    expect(relayed.mediaUrls).toHaveLength(1);
    const served = await harness.http.get(relayed.mediaUrls[0]!.slice(PUBLIC_BASE_URL.length)).buffer(true);
    expect(served.status).toBe(200);
    expect(Buffer.compare(served.body as Buffer, PNG_BYTES)).toBe(0);
    const image = live.messages.last().locator('img');
    await image.waitFor({ state: 'visible' });
    expect(await image.getAttribute('src')).toMatch(/^\/transcripts\/.+\/media\/[0-9a-f]{24}\?expires=/);
    expect(await live.messages.last().locator('.text').innerText()).toBe('(1 photo) This is the cleat');
    expect(await image.evaluate((element: { naturalWidth: number }) => element.naturalWidth)).toBe(1);
    await saveScreenshot(teammate, 'live-page-held-photo');

    // A reload while Ana holds it: her name on her message and the subtitle come back from the service.
    await visitor.reload();
    const reloaded = await openWidget(visitor);
    await waitForText(reloaded.visitorBubbles.last(), 'This is the cleat');
    const anaAgain = visitor.locator('assistant-chat-widget .incoming', { hasText: 'Which berth?' });
    expect(await anaAgain.locator('.sender-name').innerText()).toBe('Ana');
    await eventually(async () => (await visitor.locator('assistant-chat-widget .subtitle').innerText()) === "You're chatting with Ana from Support");
    await saveScreenshot(visitor, 'widget-held-by-whatsapp-teammate');
    expect(harness.models.calls.length).toBe(modelCalls);

    for (const watched of pages) {
      expect(watched.record.pageErrors).toEqual([]);
      expect(watched.record.offHostRequests).toEqual([]);
      expect(watched.record.console).toEqual([]);
    }
  }, 90_000);
});
