/**
 * The widget as browser tests see it: its parts found by role and name inside the shadow root,
 * the text of a bubble without its screen-reader prefix, and a recorder of every text the
 * newest reply shows while it streams. Shared by the widget's browser test files.
 */
import { createServer, type RequestListener } from 'node:http';
import type { Locator, Page } from 'playwright-core';
import { eventually } from './harness.js';

// What Chromium itself logs for a failed request (not the widget): tests that fail requests on purpose allow it.
export const BROWSER_NETWORK_ERROR = /^Failed to load resource: /;

/** The widget's parts as a visitor finds them (by role and name where it has them). */
export function widget(page: Page) {
  return {
    /** "Open chat", or "Open chat, 2 new messages" while replies are unread. */
    launcher: page.getByRole('button', { name: /^Open chat(, \d+ new messages?)?$/ }),
    dialog: page.getByRole('dialog'),
    log: page.getByRole('log'),
    input: page.getByRole('textbox', { name: 'Your message' }),
    send: page.getByRole('button', { name: 'Send', exact: true }),
    newChat: page.getByRole('button', { name: 'New chat', exact: true }),
    /** "Start over" in the confirmation "New chat" asks for. */
    confirmNewChat: page.getByRole('button', { name: 'Start over', exact: true }),
    close: page.getByRole('button', { name: 'Close chat', exact: true }),
    assistantBubbles: page.locator('assistant-chat-widget .message.assistant'),
    visitorBubbles: page.locator('assistant-chat-widget .message.visitor'),
    typing: page.locator('assistant-chat-widget .typing'),
    composerError: page.locator('assistant-chat-widget .composer-error'),
    badge: page.locator('assistant-chat-widget .badge'),
  };
}

interface TextNode {
  textContent: string | null;
  classList?: { contains(name: string): boolean };
}

/** The text of a bubble, without its screen-reader prefix ("You:", "Harbour Lane:"). */
export async function bubbleText(locator: Locator): Promise<string> {
  return locator.evaluate((element: { childNodes: ArrayLike<TextNode> }) =>
    Array.from(element.childNodes)
      .filter((node) => !node.classList?.contains('sr-only'))
      .map((node) => node.textContent ?? '')
      .join('')
      .trim(),
  );
}

export async function textsOf(locator: Locator): Promise<string[]> {
  const count = await locator.count();
  const texts: string[] = [];
  for (let index = 0; index < count; index += 1) texts.push(await bubbleText(locator.nth(index)));
  return texts;
}

export async function waitForText(locator: Locator, expected: string, timeoutMs = 10_000): Promise<void> {
  await eventually(async () => (await locator.count()) > 0 && (await bubbleText(locator)).includes(expected), timeoutMs);
}

export async function storedVisitor(page: Page, siteKey = 'test-site'): Promise<Record<string, string>> {
  const raw = await page.evaluate(`localStorage.getItem(${JSON.stringify(`chat-widget:${siteKey}`)})`);
  return JSON.parse(String(raw)) as Record<string, string>;
}

export async function openWidget(page: Page): Promise<ReturnType<typeof widget>> {
  const parts = widget(page);
  await parts.launcher.click();
  await parts.input.waitFor({ state: 'visible' });
  return parts;
}

/** Records every text the newest assistant bubble shows, in order, as the DOM changes. */
export const RECORD_ASSISTANT_TEXT = `(() => {
  const root = document.querySelector('assistant-chat-widget').shadowRoot;
  const seen = [];
  window.__assistantTexts = seen;
  new MutationObserver(() => {
    const bubbles = root.querySelectorAll('.message.assistant');
    const last = bubbles[bubbles.length - 1];
    const text = last ? last.lastChild.textContent.trim() : '';
    if (seen[seen.length - 1] !== text) seen.push(text);
  }).observe(root, { subtree: true, childList: true, characterData: true });
})()`;

export interface WidgetHost {
  /** `http://127.0.0.1:<port>`: the host pages and the service share it. */
  origin: string;
  close(): Promise<void>;
}

/**
 * A site hosting the widget on `port`: each of `pages` (by path, e.g. `/host`) served as HTML,
 * no favicon, everything else answered by the service's `app` (so `<origin>/widget.js` is the widget).
 */
export async function startWidgetHost(port: number, app: RequestListener, pages: Record<string, string>): Promise<WidgetHost> {
  const server = createServer((request, response) => {
    const page = request.url === undefined ? undefined : pages[request.url];
    if (page !== undefined) response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    else if (request.url === '/favicon.ico') response.writeHead(204).end();
    else app(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    origin: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A host page with the widget's script tag (`attributes` added to it, e.g. `data-site-key="test-site"`). */
export function hostPage(origin: string, attributes: string, title = 'Shop'): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><main><h1>${title}</h1></main>
<script src="${origin}/widget.js" ${attributes} async></script></body></html>`;
}
