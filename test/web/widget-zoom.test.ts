/**
 * The widget at 400% zoom, in Chromium: a 1280×800 window zoomed to 400% is a 320×200 CSS-pixel
 * viewport (1280×1024, WCAG's reflow reference, is 320×256). The open panel leaves the
 * conversation room to read (at least a third of the height) and nothing in it overflows sideways
 * or out of the window: the composer, the header's buttons and the message box all fit.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { hostPage, openWidget, startWidgetHost, waitForText, type WidgetHost } from '../support/widget-page.js';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: () => ({ text: 'We are open nine to five.' }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane Chandlery', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, { '/light': hostPage(origin, 'data-site-key="test-site"') });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

interface Layout {
  viewport: { width: number; height: number };
  log: number;
  /** How far anything in the panel reaches past its own box or the window, sideways or down (px). */
  overflows: Record<string, number>;
}

/** The open panel's layout as the visitor sees it. */
const MEASURE = `(() => {
  const root = document.querySelector('assistant-chat-widget').shadowRoot;
  const panel = root.querySelector('.panel');
  const box = (node) => node.getBoundingClientRect();
  const overflows = {};
  for (const selector of ['.header', '.composer', '.input', '.send', '.composer-footer']) {
    const node = root.querySelector(selector);
    const rect = box(node);
    const beyond = Math.max(node.scrollWidth - node.clientWidth, rect.right - innerWidth, rect.bottom - innerHeight, box(panel).left - rect.left, 0);
    overflows[selector] = Math.round(beyond);
  }
  return { viewport: { width: innerWidth, height: innerHeight }, log: Math.round(box(root.querySelector('.log')).height), overflows };
})()`;

describe('400% zoom', () => {
  test.each([
    [320, 200],
    [320, 256],
  ])('a %i×%i CSS-pixel window: the conversation keeps a third of the height, and nothing overflows', async (width, height) => {
    const watched = await chromium.newPage({ width, height });
    try {
      const { page } = watched;
      await page.goto(`${host.origin}/light`);
      const parts = await openWidget(page);
      await parts.input.fill('When are you open on Saturdays in winter?');
      await parts.input.press('Enter');
      await waitForText(parts.assistantBubbles.last(), 'We are open nine to five.');
      const layout = (await page.evaluate(MEASURE)) as Layout;
      expect(layout.viewport).toEqual({ width, height });
      // The log's height where it is too short (true where it is tall enough).
      expect({ log: layout.log >= height / 3 || layout.log, ...layout.overflows }).toEqual({
        log: true,
        '.header': 0,
        '.composer': 0,
        '.input': 0,
        '.send': 0,
        '.composer-footer': 0,
      });
      expect(watched.record.pageErrors).toEqual([]);
    } finally {
      await watched.close();
    }
  });
});
