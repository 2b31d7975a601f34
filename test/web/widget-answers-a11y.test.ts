/**
 * Answer buttons and what assistive technology gets, in Chromium with axe-core: over a spread of
 * brand colours (yellow, lime, teal, grey, navy, pink, white, black), in the light and the dark
 * palette, every coloured foreground — the answers' labels and outlines, the used answer, the
 * header and the visitor's own bubbles on the accent — reads at ≥ 4.5:1 (text) and ≥ 3:1
 * (outlines), and axe finds nothing; after choosing an answer the focus is in the message box
 * (Escape still closes the panel); answers are plain buttons in a labelled group, the header's
 * buttons are not described by their own name again, and a reply is announced once, its list
 * items separated, and then taken out of the live region (browsing reads it once, in the log).
 * axe-core also runs in every other state: open, closed with an unread reply and its preview,
 * "New chat?", a refused and a waiting message, the photo viewer, in both palettes (a yellow accent).
 * Questions reach the widget as the web channel writes them: events in its event log.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { createEventLog, type EventLog } from '../../channels/web/event-log.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PNG_BYTES } from '../support/media-fixtures.js';
import { findFreePort } from '../support/services.js';
import { hostPage, openWidget, startWidgetHost, storedVisitor, waitForText, widget, type WidgetHost } from '../support/widget-page.js';

const ACCENTS = { yellow: '#fab005', lime: '#82c91e', teal: '#0b7285', grey: '#808080', navy: '#1a1b4b', pink: '#ff66cc', white: '#ffffff', black: '#000000' };
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
    script: ({ userText }) => ({ text: `Answer to: ${userText.slice(-30)}` }),
    env: {
      WEB_SITES: JSON.stringify(
        Object.entries(ACCENTS).map(([name, accentColor]) => ({ key: `site-${name}`, name: 'Harbour Lane', origins: [origin], accentColor, language: 'en' })),
      ),
    },
  });
  const pages: Record<string, string> = {};
  for (const name of Object.keys(ACCENTS)) {
    pages[`/${name}/light`] = hostPage(origin, `data-site-key="site-${name}"`);
    pages[`/${name}/dark`] = hostPage(origin, `data-site-key="site-${name}" data-theme="dark"`);
  }
  host = await startWidgetHost(port, harness.services.app, pages);
  events = createEventLog(harness.services.redis);
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

/** Opens the widget on `path` and has one exchange, so its event stream is up. */
async function chat(page: Page, path: string, siteKey: string) {
  await page.goto(`${host.origin}${path}`);
  const parts = await openWidget(page);
  await parts.input.fill('hello there');
  await parts.send.click();
  await waitForText(parts.assistantBubbles.last(), 'Answer to: hello there');
  return { parts, siteKey };
}

/** The web channel's message event, as it writes a reply (with a question's answers when given). */
async function reply(page: Page, siteKey: string, text: string, choices?: typeof YES_NO): Promise<void> {
  asked += 1;
  const { conversationId } = await storedVisitor(page, siteKey);
  await events.append(conversationId!, 'message', { id: `out:a11y-${asked}:0`, role: 'assistant', text, ...(choices ? { choices } : {}), at: Date.now() });
}

interface Colours {
  text: string;
  border: string;
  background: string;
  around: string;
}

/** Computed colours of the widget's `selector`: its text, its border, its own opaque background, and its parent's. */
function coloursOf(page: Page, selector: string): Promise<Colours> {
  return page.evaluate(`((selector) => {
    const root = document.querySelector('assistant-chat-widget').shadowRoot;
    const node = root.querySelector(selector);
    const opaque = (start) => {
      for (let element = start; element; element = element.parentElement) {
        const colour = getComputedStyle(element).backgroundColor;
        if (!/rgba\\(.*, 0\\)$/.test(colour) && colour !== 'transparent') return colour;
      }
      return 'rgb(255, 255, 255)';
    };
    const style = getComputedStyle(node);
    return { text: style.color, border: style.borderTopColor, background: opaque(node), around: opaque(node.parentElement) };
  })(${JSON.stringify(selector)})`) as Promise<Colours>;
}

function contrast(first: string, second: string): number {
  const channels = (value: string): number[] =>
    (/rgba?\(([^)]+)\)/.exec(value)?.[1] ?? '')
      .split(/[\s,/]+/)
      .filter(Boolean)
      .slice(0, 3)
      .map(Number);
  const luminance = (value: string): number => {
    const [r = 0, g = 0, b = 0] = channels(value).map((channel) =>
      channel / 255 <= 0.03928 ? channel / 255 / 12.92 : ((channel / 255 + 0.055) / 1.055) ** 2.4,
    );
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return Math.round(((lighter + 0.05) / (darker + 0.05)) * 100) / 100;
}

/** axe-core's violations on the page (the widget's shadow root included), as `rule: target` lines. */
async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.addScriptTag({ content: axe.source });
  const results = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })`,
  )) as {
    violations: { id: string; nodes: { target: unknown[]; failureSummary?: string }[] }[];
  };
  return results.violations.flatMap((violation) =>
    violation.nodes.map((node) => `${violation.id}: ${JSON.stringify(node.target)} ${node.failureSummary ?? ''}`),
  );
}

describe.each(Object.keys(ACCENTS))('a %s accent', (accent) => {
  test.each(['light', 'dark'])(
    '%s palette: answers, the used answer, the header and own bubbles read; axe finds nothing',
    async (palette) => {
      const watched = await chromium.newPage(undefined, { colorScheme: palette === 'dark' ? 'dark' : 'light' });
      try {
        const { page } = watched;
        const { parts, siteKey } = await chat(page, `/${accent}/${palette}`, `site-${accent}`);
        await reply(page, siteKey, 'Please confirm: Reschedule a delivery', YES_NO);
        const answers = page.getByRole('group', { name: 'Answers' });
        await answers.waitFor({ state: 'visible', timeout: 10_000 });

        const measured: Record<string, number> = {};
        for (const [index, name] of [
          [1, 'Confirm'],
          [2, 'Cancel'],
        ] as const) {
          const button = await coloursOf(page, `.choices button:nth-child(${index})`);
          measured[`${name} text`] = contrast(button.text, button.background);
          measured[`${name} outline`] = contrast(button.border, button.around);
        }
        const header = await coloursOf(page, '.title');
        measured['header text'] = contrast(header.text, header.background);
        const own = await coloursOf(page, '.message.visitor');
        measured['own bubble text'] = contrast(own.text, own.background);
        expect(await axeViolations(page)).toEqual([]);

        await answers.getByRole('button', { name: 'Cancel' }).click();
        await waitForText(parts.visitorBubbles.last(), 'Cancel');
        const used = await coloursOf(page, '.choices button.chosen');
        measured['used answer text'] = contrast(used.text, used.background);
        expect(await axeViolations(page)).toEqual([]);

        for (const [what, ratio] of Object.entries(measured)) {
          expect({ what, enough: ratio >= (what.endsWith('outline') ? 3 : 4.5), ratio }).toEqual({ what, enough: true, ratio });
        }
        expect(watched.record.pageErrors).toEqual([]);
      } finally {
        await watched.close();
      }
    },
    60_000,
  );
});

describe('keyboard and screen readers', () => {
  test('after choosing an answer by keyboard the focus is in the message box, and Escape still closes the panel', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      const { parts, siteKey } = await chat(page, '/teal/light', 'site-teal');
      await reply(page, siteKey, 'Please confirm: Reschedule a delivery', YES_NO);
      const confirm = page.getByRole('group', { name: 'Answers' }).getByRole('button', { name: 'Confirm' });
      await confirm.waitFor({ state: 'visible', timeout: 10_000 });
      await confirm.focus();
      await page.keyboard.press('Enter');
      await waitForText(parts.visitorBubbles.last(), 'Confirm');
      const focused = await page.evaluate(`(() => {
        const root = document.querySelector('assistant-chat-widget').shadowRoot;
        return document.activeElement === root.host ? root.activeElement?.getAttribute('aria-label') ?? root.activeElement?.id ?? root.activeElement?.tagName : document.activeElement?.tagName;
      })()`);
      expect(focused).toBe('chat-panel-input');
      await page.keyboard.press('Escape');
      await parts.dialog.waitFor({ state: 'hidden', timeout: 5_000 });
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });

  test('answers are plain buttons in a labelled group; header buttons have a name and no description repeating it', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      const { siteKey } = await chat(page, '/teal/light', 'site-teal');
      await reply(page, siteKey, 'Please confirm: Reschedule a delivery', YES_NO);
      await page.getByRole('group', { name: 'Answers' }).waitFor({ state: 'visible', timeout: 10_000 });
      const cdp = await page.context().newCDPSession(page);
      const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
        nodes: { role?: { value: string }; name?: { value: string }; description?: { value: string }; properties?: { name: string }[] }[];
      };
      const named = (name: string) =>
        nodes.filter((node) => node.name?.value === name && node.role?.value !== 'StaticText' && node.role?.value !== 'InlineTextBox');
      for (const answer of ['Confirm', 'Cancel']) {
        const [node] = named(answer);
        expect({ answer, role: node?.role?.value, toggle: node?.properties?.some((property) => property.name === 'pressed') ?? false }).toEqual({
          answer,
          role: 'button',
          toggle: false,
        });
      }
      for (const button of ['New chat', 'Close chat', 'Send']) {
        const [node] = named(button);
        expect({ button, role: node?.role?.value, description: node?.description?.value ?? '' }).toEqual({ button, role: 'button', description: '' });
      }
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });

  test('a reply is announced once with its list items separated, then leaves the live region', async () => {
    const watched = await chromium.newPage();
    try {
      const { page } = watched;
      const { siteKey } = await chat(page, '/teal/light', 'site-teal');
      const announcer = page.locator('assistant-chat-widget [aria-live="polite"].sr-only');
      await eventually(async () => (await announcer.locator('p').count()) === 0);
      await reply(page, siteKey, 'Your order:\n- Delivery slot\n- Order number: 5001');
      await eventually(async () => (await announcer.locator('p').count()) === 1);
      const said = await announcer.locator('p').innerText();
      expect(said).toMatch(/Your order: Delivery slot\. Order number: 5001\.$/);
      // Spoken: gone from the live region, so reading the page reads the reply once, in the log.
      await eventually(async () => (await announcer.locator('p').count()) === 0);
      expect(await widget(page).assistantBubbles.last().innerText()).toContain('Delivery slot');
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });
});

describe.each(['light', 'dark'])('axe in every state, the %s palette', (palette) => {
  test('closed with an unread reply, open, "New chat?", a refused and a waiting message, the photo viewer', async () => {
    const watched = await chromium.newPage(undefined, { colorScheme: palette === 'dark' ? 'dark' : 'light' });
    try {
      const { page } = watched;
      const found: Record<string, string[]> = {};
      const check = async (state: string) => {
        // Measured once the panel's opening fade is over (axe would blend its colours with the page's).
        await page.evaluate(`Promise.all(document.querySelector('assistant-chat-widget').shadowRoot.getAnimations()
          .filter((animation) => animation.effect.getTiming().iterations !== Infinity).map((animation) => animation.finished))`);
        const violations = await axeViolations(page);
        if (violations.length > 0) found[state] = violations;
      };
      const { parts, siteKey } = await chat(page, `/yellow/${palette}`, 'site-yellow');
      await check('open');

      await parts.close.click();
      await reply(page, siteKey, 'Your **order** is ready.');
      await page.locator('assistant-chat-widget .launcher-preview').waitFor({ state: 'visible' });
      await check('closed, unread');

      await widget(page).launcher.click();
      await parts.newChat.click();
      await parts.confirmNewChat.waitFor({ state: 'visible' });
      await check('new chat?');
      await page.keyboard.press('Escape');

      let failure: 'refuse' | 'drop' | undefined = 'refuse';
      await page.route('**/api/widget/messages', (route) =>
        failure === 'drop'
          ? route.abort('connectionrefused')
          : failure === 'refuse'
            ? route.fulfill({ status: 400, contentType: 'application/json', body: '{"error":"refused"}', headers: { 'Access-Control-Allow-Origin': '*' } })
            : route.continue(),
      );
      await parts.input.fill('Refused one');
      await parts.input.press('Enter');
      await page.getByRole('button', { name: 'Retry', exact: true }).waitFor({ state: 'visible' });
      await check('refused');
      failure = 'drop';
      await parts.input.fill('Waiting one');
      await parts.input.press('Enter');
      await page.locator('assistant-chat-widget .delivery.waiting').waitFor({ state: 'visible' });
      await check('waiting');
      failure = undefined;

      await page.evaluate(`(() => {
        const input = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('textarea');
        const bytes = Uint8Array.from(atob('${PNG_BYTES.toString('base64')}'), (character) => character.charCodeAt(0));
        const data = new DataTransfer();
        data.items.add(new File([bytes], 'cleat.png', { type: 'image/png' }));
        input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      })()`);
      await page.locator('assistant-chat-widget .attachment.ready').waitFor();
      await parts.input.fill('The cleat');
      await parts.input.press('Enter');
      const photo = page.getByRole('button', { name: 'View photo cleat.png', exact: true });
      await eventually(async () => (await photo.count()) === 1 && (await photo.isEnabled()));
      await photo.click();
      await page.getByRole('dialog', { name: 'cleat.png', exact: true }).waitFor({ state: 'visible' });
      await check('photo viewer');
      expect(found).toEqual({});
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  }, 90_000);
});
