/**
 * The satisfaction question in the widget, in Chromium: it arrives with five buttons that stay
 * (the history the widget reads on seeing it holds it), a tap rates, a comment is thanked, and a
 * reload shows the whole exchange in order — the question's buttons disabled with the tapped one
 * pressed. The same messages are the conversation's transcript in MongoDB, in order, and the
 * model never reads them.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { bubbleText, hostPage, openWidget, startWidgetHost, textsOf, type WidgetHost } from '../support/widget-page.js';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: ({ userText }) => ({ text: `Happy to help: ${userText}` }),
    env: {
      CSAT_ENABLED: 'true',
      CSAT_AFTER_MINUTES: '0.02',
      WEB_SITES: JSON.stringify([{ key: 'csat-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]),
    },
  });
  host = await startWidgetHost(port, harness.services.app, { '/host': hostPage(origin, 'data-site-key="csat-site"') });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

const GREETING = 'Hi! How can I help you today?';
const QUESTION = 'How did we do? Tap a rating — it takes a second.';
const PROMPT = 'Thank you! Anything you would like to add? Just write it here — or carry on, no need to answer.';
const THANKS = 'Thank you for your feedback!';

test('the rating question stays with its buttons, and the whole exchange is there after a reload and in the transcript', async () => {
  const watched = await chromium.newPage();
  try {
    const { page } = watched;
    await page.goto(`${host.origin}/host`);
    let parts = await openWidget(page);
    const messages = () => page.locator('assistant-chat-widget .message.assistant, assistant-chat-widget .message.visitor');
    const groups = page.getByRole('group', { name: 'Answers' });

    await parts.input.fill('Do you ship to the Canaries?');
    await parts.send.click();
    let seen: string[] = [];
    await eventually(
      async () => (seen = await textsOf(messages())).at(-1)?.startsWith('Happy'),
      10_000,
      () => `${seen.join(' | ')} ${JSON.stringify(watched.record)}`,
    );
    const replies = harness.models.replyCalls().length;
    // The question replies to no message this tab knows: the widget reads the history again on seeing it.
    const reread = page.waitForResponse((response) => response.url().includes('/api/widget/history'), { timeout: 20_000 });
    await eventually(async () => (await groups.count()) === 1, 20_000);
    await reread;
    await eventually(
      async () => (seen = await textsOf(messages())).length === 4,
      10_000,
      () => seen.join(' | '),
    );
    // After that read the buttons are still there, tappable.
    expect(await groups.count()).toBe(1);
    const good = groups.getByRole('button', { name: '⭐⭐⭐⭐ Good' });
    expect(await good.isDisabled()).toBe(false);
    expect(await bubbleText(parts.assistantBubbles.last())).toBe(QUESTION);

    await good.click();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())) === PROMPT);
    await parts.input.fill('Quick and clear, thank you');
    await parts.send.click();
    await eventually(async () => (await bubbleText(parts.assistantBubbles.last())) === THANKS);
    const exchange = [
      'Do you ship to the Canaries?',
      'Happy to help: Do you ship to the Canaries?',
      QUESTION,
      '⭐⭐⭐⭐ Good',
      PROMPT,
      'Quick and clear, thank you',
      THANKS,
    ];
    // The site's greeting first (drawn by the widget, not a message of the conversation).
    expect(await textsOf(messages())).toEqual([GREETING, ...exchange]);

    await page.reload();
    parts = await openWidget(page);
    await eventually(
      async () => (seen = await textsOf(messages())).length === exchange.length + 1,
      10_000,
      () => seen.join(' | '),
    );
    expect(seen).toEqual([GREETING, ...exchange]);
    expect(await groups.count()).toBe(1);
    expect(await good.isDisabled()).toBe(true);
    expect(await good.evaluate((button) => button.classList.contains('chosen'))).toBe(true);
    // No reply model call for any of it (the comment was read as one by the turn's judge).
    expect(harness.models.replyCalls().length).toBe(replies);

    // The transcript in MongoDB holds the same messages, in the same order.
    const comment = await eventually(
      async () => (await harness.services.transcripts.messages.findOne({ text: 'Quick and clear, thank you' }).lean()) ?? undefined,
    );
    const transcript = await eventually(async () => {
      const all = await harness.services.transcripts.conversationMessages(comment.conversationId);
      return all.length === exchange.length ? all : undefined;
    });
    expect(transcript.map((message) => message.text.split('\n')[0])).toEqual(exchange);
    expect(transcript.map((message) => message.direction)).toEqual(['inbound', 'outbound', 'outbound', 'inbound', 'outbound', 'inbound', 'outbound']);
    expect(watched.record.pageErrors).toEqual([]);
  } finally {
    await watched.close();
  }
}, 90_000);
