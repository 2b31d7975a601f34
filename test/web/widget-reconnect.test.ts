/**
 * The widget while the service dies and comes back, in headless Chromium. The service runs as
 * its own process (`src/main.ts all`: web and worker) on the real `@ai-sdk/openai` path
 * against a local OpenAI-compatible stub that streams its reply a word at a time; a test kills
 * it with SIGKILL and starts it again on the same port. The host page is served by this
 * process on another allowed origin, so it stays up while the service is down.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { DESKTOP, launchBrowser, saveScreenshot, type LaunchedBrowser, type WatchedPage } from '../support/browser.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import {
  eventually,
  ownRedisDatabase,
  startServiceProcess,
  TEST_ACCOUNT_SID,
  TEST_AUTH_TOKEN,
  testEnv,
  type FakeTwilio,
  type ServiceProcess,
} from '../support/harness.js';
import { startOpenAIStub, type ChatCompletionRequestBody, type OpenAIStub } from '../support/openai-stub.js';
import { findFreePort } from '../support/services.js';
import { stubAssistant } from '../support/stub-assistant.js';
import { bubbleText, openWidget, RECORD_ASSISTANT_TEXT, storedVisitor, textsOf, waitForText, widget } from '../support/widget-page.js';

const GREETING = 'Hi! How can I help?';
const WORD_DELAY_MS = 120;
// Tall enough to fill the log of a short window, so its "not sent" line starts out of view.
const LONG_QUESTION = [
  'Hello,',
  'we arrive on Friday.',
  'Boat: 12 m sloop.',
  'Draft: 1.9 m.',
  'Two adults, one dog.',
  'Shore power?',
  'Water?',
  'Fuel?',
  'Showers?',
  'Laundry?',
  'Wi-Fi?',
  'Parking?',
  'Late arrival ok?',
  'Thanks!',
].join('\n');
const REPLIES: Record<string, string> = {
  'Is the east quay open?': 'Yes, the east quay is open every day from seven.',
  [LONG_QUESTION]: 'Welcome on Friday: there is a 12 m berth for you, with power, water and showers.',
  'Can I leave my dinghy on the pontoon?':
    'Yes: dinghies can stay on the inner pontoon for up to three nights. Tie up on the north side, away from the fuel berth, and put your berth number on it.',
  'How does winter storage work?':
    'Winter storage runs from November to March. We lift your boat, pressure-wash the hull, and keep it on a cradle in the fenced yard. You can visit on weekdays, and we launch it again in spring.',
};
// What Chromium logs for a request to a service that is down (not the widget).
const SERVICE_DOWN_CONSOLE = /^Failed to load resource: |net::ERR_CONNECTION_REFUSED|net::ERR_/;

let stub: OpenAIStub;
let twilio: FakeTwilio;
let chromium: LaunchedBrowser;
let service: ServiceProcess | undefined;
let env: Record<string, string>;
let serviceOrigin: string;
let hostOrigin: string;
let hostServer: Server;

function lastUserText(body: ChatCompletionRequestBody): string {
  const content = [...body.messages].reverse().find((message) => message.role === 'user')?.content;
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => part.text ?? '').join('');
}

/** Reply (not judge) calls the model got for `question`. */
const replyCalls = (question: string): number =>
  stub.requests.filter((request) => !request.body.response_format && lastUserText(request.body).includes(question)).length;

beforeAll(async () => {
  stub = await startOpenAIStub();
  stub.respondWith((body) => {
    if (body.response_format?.json_schema) return stubAssistant(body);
    const question = lastUserText(body);
    const reply = Object.entries(REPLIES).find(([asked]) => question.includes(asked))?.[1] ?? 'I can help with that.';
    return { text: reply, chunkDelayMs: WORD_DELAY_MS };
  });
  twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
  const [servicePort, hostPort] = [await findFreePort(), await findFreePort()];
  serviceOrigin = `http://127.0.0.1:${servicePort}`;
  hostOrigin = `http://127.0.0.1:${hostPort}`;
  env = testEnv(twilio.baseUrl, {
    PORT: String(servicePort),
    OPENAI_BASE_URL: stub.baseUrl,
    WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [hostOrigin], greeting: GREETING, language: 'en' }]),
    ...ownRedisDatabase(3),
  });
  hostServer = createServer((request, response) => {
    if (request.url !== '/') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harbour Lane</title><link rel="icon" href="data:,"></head>
<body><h1>Moorings and berths</h1>
<script src="${serviceOrigin}/widget.js" data-site-key="test-site" async></script></body></html>`);
  });
  await new Promise<void>((resolve) => hostServer.listen(hostPort, '127.0.0.1', () => resolve()));
  [service, chromium] = await Promise.all([startServiceProcess(env), launchBrowser()]);
}, 90_000);

afterAll(async () => {
  await chromium?.close();
  await service?.kill();
  hostServer?.closeAllConnections();
  await new Promise((resolve) => hostServer?.close(resolve));
  await stub?.close();
  await twilio?.close();
});

let opened: WatchedPage[] = [];

// A test that failed half-way may have left the service down.
beforeEach(async () => {
  if (!service) await restartService();
}, 60_000);

afterEach(async () => {
  const pages = opened;
  opened = [];
  for (const watched of pages) {
    const { record } = watched;
    await watched.close();
    expect(record.offHostRequests).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    expect(record.dialogs).toEqual([]);
    expect(record.console.filter((message) => !SERVICE_DOWN_CONSOLE.test(message.text))).toEqual([]);
  }
});

async function openChat(viewport = DESKTOP): Promise<{ page: Page; parts: ReturnType<typeof widget> }> {
  const watched = await chromium.newPage(viewport);
  opened.push(watched);
  await watched.page.goto(`${hostOrigin}/`);
  return { page: watched.page, parts: await openWidget(watched.page) };
}

const reconnecting = (page: Page) => page.locator('assistant-chat-widget .connection');

async function restartService(): Promise<void> {
  service = await startServiceProcess(env);
}

async function killService(): Promise<void> {
  await service?.kill();
  service = undefined;
}

async function history(page: Page): Promise<{ role: string; text: string }[]> {
  const { token } = await storedVisitor(page);
  const response = await fetch(`${serviceOrigin}/api/widget/history`, { headers: { Authorization: `Bearer ${token}` } });
  const body = (await response.json()) as { messages: { role: string; text: string }[] };
  return body.messages.map(({ role, text }) => ({ role, text }));
}

describe('the service killed and restarted', () => {
  test('a message typed while it is down says "Reconnecting…", is in view, and is answered once after it is back, with no click', async () => {
    const { page, parts } = await openChat({ width: 1280, height: 600 });
    const first = 'Is the east quay open?';
    await parts.input.fill(first);
    await parts.input.press('Enter');
    await waitForText(parts.assistantBubbles.last(), REPLIES[first]!);
    // Complete (the reply itself arrived, not only its streamed words): the turn is over.
    await eventually(async () => (await parts.assistantBubbles.last().getAttribute('aria-busy')) === null);
    const clientIds: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/widget/messages') && request.method() === 'POST') {
        clientIds.push((JSON.parse(request.postData() ?? '{}') as { clientMessageId: string }).clientMessageId);
      }
    });

    await killService();
    await eventually(async () => (await reconnecting(page).textContent()) === 'Reconnecting…', 15_000);
    expect(await reconnecting(page).getAttribute('role')).toBe('status');
    expect(await reconnecting(page).getAttribute('aria-live')).toBe('polite');
    expect(await reconnecting(page).isVisible()).toBe(true);

    await parts.input.fill(LONG_QUESTION);
    await parts.input.press('Enter');
    const delivery = page.locator('assistant-chat-widget .delivery').last();
    await delivery.waitFor({ state: 'visible' });
    // "Sending…" first (issue 29: the state in words), then why it waits.
    await eventually(async () => (await delivery.innerText()).includes('Not sent yet. It will be sent when the connection is back.') || undefined);
    // The line is scrolled into the log's view, not left under the composer.
    const overflows = await parts.log.evaluate((log: { scrollHeight: number; clientHeight: number }) => log.scrollHeight > log.clientHeight);
    expect(overflows).toBe(true);
    const [line, log] = [await delivery.boundingBox(), await parts.log.boundingBox()];
    expect(line!.y + line!.height).toBeLessThanOrEqual(log!.y + log!.height);
    await saveScreenshot(page, 'widget-reconnecting');

    await restartService();
    await waitForText(parts.assistantBubbles.last(), REPLIES[LONG_QUESTION]!, 30_000);
    await eventually(async () => (await reconnecting(page).isHidden()) || undefined);
    expect(await reconnecting(page).textContent()).toBe('');
    await page.waitForTimeout(500);

    // Nothing but "Sent" (issue 29: the state in words) under the visitor's messages.
    expect((await page.locator('assistant-chat-widget .delivery:visible').allInnerTexts()).filter((text) => text !== 'Sent')).toEqual([]);
    expect(await textsOf(parts.visitorBubbles)).toEqual([first, LONG_QUESTION]);
    expect(await textsOf(parts.assistantBubbles)).toEqual([GREETING, REPLIES[first], REPLIES[LONG_QUESTION]]);
    expect(clientIds.length).toBeGreaterThanOrEqual(2);
    expect(new Set(clientIds).size).toBe(1);
    expect(replyCalls(LONG_QUESTION)).toBe(1);
    expect(await history(page)).toEqual([
      { role: 'visitor', text: first },
      { role: 'assistant', text: REPLIES[first] },
      { role: 'visitor', text: LONG_QUESTION },
      { role: 'assistant', text: REPLIES[LONG_QUESTION] },
    ]);
  }, 120_000);

  test('a half-streamed answer shows "Reconnecting…", then ends as one complete answer, never shown twice', async () => {
    const question = 'How does winter storage work?';
    const reply = REPLIES[question]!;
    const { page, parts } = await openChat();
    await page.evaluate(RECORD_ASSISTANT_TEXT);
    await parts.input.fill(question);
    await parts.input.press('Enter');
    const answer = parts.assistantBubbles.nth(1);
    await eventually(async () => (await answer.count()) > 0 && (await bubbleText(answer)).split(' ').length >= 6, 15_000);

    await killService();
    await eventually(async () => (await reconnecting(page).textContent()) === 'Reconnecting…', 15_000);
    const frozen = await bubbleText(answer);
    // Killed mid-answer: part of the reply is on screen, not all of it.
    expect(reply.startsWith(frozen)).toBe(true);
    expect(frozen).not.toBe(reply);
    expect(replyCalls(question)).toBe(1);

    await restartService();
    await eventually(async () => (await bubbleText(answer)) === reply && (await answer.getAttribute('aria-busy')) === null, 40_000);
    await eventually(async () => (await reconnecting(page).isHidden()) || undefined);
    await page.waitForTimeout(500);

    // A worker ran the turn again from the start; the visitor saw one answer grow, never a repeat.
    expect(replyCalls(question)).toBe(2);
    expect(await textsOf(parts.assistantBubbles)).toEqual([GREETING, reply]);
    const seen = (await page.evaluate('window.__assistantTexts')) as string[];
    const shown = seen.filter((text) => text !== GREETING && text !== '');
    expect(shown.at(-1)).toBe(reply);
    for (const text of shown) expect(reply.startsWith(text)).toBe(true);
    expect(await history(page)).toEqual([
      { role: 'visitor', text: question },
      { role: 'assistant', text: reply },
    ]);
  }, 120_000);

  test('with only the web process killed mid-answer, the answer goes on where it stopped once the stream is back', async () => {
    const question = 'Can I leave my dinghy on the pontoon?';
    const reply = REPLIES[question]!;
    // Web and worker as separate processes; only the web one dies.
    await killService();
    const [web, worker] = await Promise.all([startServiceProcess(env, 'web'), startServiceProcess(env, 'worker')]);
    let restartedWeb: ServiceProcess | undefined;
    try {
      const { page, parts } = await openChat();
      await page.evaluate(RECORD_ASSISTANT_TEXT);
      await parts.input.fill(question);
      await parts.input.press('Enter');
      const answer = parts.assistantBubbles.nth(1);
      await eventually(async () => (await answer.count()) > 0 && (await bubbleText(answer)).split(' ').length >= 4, 15_000);

      await web.kill();
      await eventually(async () => (await reconnecting(page).textContent()) === 'Reconnecting…', 15_000);
      const frozen = await bubbleText(answer);
      expect(frozen).not.toBe(reply);

      restartedWeb = await startServiceProcess(env, 'web');
      await eventually(async () => (await bubbleText(answer)) === reply && (await answer.getAttribute('aria-busy')) === null, 40_000);
      await eventually(async () => (await reconnecting(page).isHidden()) || undefined);
      await page.waitForTimeout(500);

      // The worker never stopped: one model call, and the visitor saw one answer grow, never a repeat.
      expect(replyCalls(question)).toBe(1);
      expect(await textsOf(parts.assistantBubbles)).toEqual([GREETING, reply]);
      const seen = (await page.evaluate('window.__assistantTexts')) as string[];
      const shown = seen.filter((text) => text !== GREETING && text !== '');
      expect(shown.at(-1)).toBe(reply);
      for (const text of shown) expect(reply.startsWith(text)).toBe(true);
    } finally {
      await Promise.all([web.kill(), worker.kill(), restartedWeb?.kill()]);
    }
  }, 120_000);
});
