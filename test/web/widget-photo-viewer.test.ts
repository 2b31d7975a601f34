/**
 * A sent photo opened large, in Chromium: the viewer covers the page (not only the 380 px panel),
 * shows a 1600×1200 photo at its own size where the window allows and fitted to a smaller window,
 * and offers a download link carrying the photo's bytes under its name.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Page } from 'playwright-core';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { hostPage, openWidget, startWidgetHost, type WidgetHost } from '../support/widget-page.js';

let harness: Harness;
let chromium: LaunchedBrowser;
let host: WidgetHost;

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  const origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    script: () => ({ text: 'Thanks for the photo.' }),
    env: { WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [origin], language: 'en' }]) },
  });
  host = await startWidgetHost(port, harness.services.app, { '/light': hostPage(origin, 'data-site-key="test-site"') });
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  await host?.close();
  await harness?.close();
});

/** A `width`×`height` PNG drawn in the page, pasted into the message box as `name`; resolves to its size in bytes. */
async function pasteDrawn(page: Page, name: string, width: number, height: number): Promise<number> {
  return (await page.evaluate(`(async () => {
    const canvas = new OffscreenCanvas(${width}, ${height});
    const context = canvas.getContext('2d');
    context.fillStyle = '#0e7490';
    context.fillRect(0, 0, ${width}, ${height});
    const blob = await canvas.convertToBlob({ type: 'image/png' });
    const input = document.querySelector('assistant-chat-widget').shadowRoot.querySelector('textarea');
    const data = new DataTransfer();
    data.items.add(new File([blob], '${name}', { type: 'image/png' }));
    input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    return blob.size;
  })()`)) as number;
}

describe('the photo viewer', () => {
  test.each([
    ['a window larger than the photo', { width: 1800, height: 1400 }, { width: 1600, height: 1200 }],
    ['a laptop window', DESKTOP, undefined],
  ] as const)(
    '%s: the photo over the whole page, at its own size where it fits, with a download link',
    async (_name, viewport, exact) => {
      const watched = await chromium.newPage(viewport);
      try {
        const { page } = watched;
        await page.goto(`${host.origin}/light`);
        const parts = await openWidget(page);
        const size = await pasteDrawn(page, 'hull.png', 1600, 1200);
        await eventually(async () => (await page.locator('assistant-chat-widget .attachment.ready').count()) === 1 || undefined);
        await parts.input.fill('The hull');
        await parts.input.press('Enter');
        const thumbnail = page.getByRole('button', { name: 'View photo hull.png', exact: true });
        await eventually(async () => (await page.locator('assistant-chat-widget .outgoing .thumbnail.drawn').count()) === 1 || undefined);
        await thumbnail.click();
        const viewer = page.getByRole('dialog', { name: 'hull.png', exact: true });
        await viewer.waitFor({ state: 'visible' });

        // Over the page, not the panel.
        const cover = (await viewer.boundingBox())!;
        expect(cover).toEqual({ x: 0, y: 0, width: viewport.width, height: viewport.height });
        const photo = (await viewer.locator('canvas').boundingBox())!;
        if (exact) expect({ width: Math.round(photo.width), height: Math.round(photo.height) }).toEqual(exact);
        else {
          // Fitted to the window (far beyond the panel's 348 px), at 4:3.
          expect(photo.height).toBeGreaterThan(viewport.height * 0.85);
          expect(photo.width / photo.height).toBeCloseTo(4 / 3, 1);
        }

        const download = viewer.getByRole('link', { name: 'Download', exact: true });
        expect(await download.getAttribute('download')).toBe('hull.png');
        const saved = await download.evaluate((link) =>
          fetch((link as unknown as { href: string }).href).then((response) => response.blob().then((blob) => blob.size)),
        );
        expect(saved).toBe(size);
        await page.keyboard.press('Escape');
        await viewer.waitFor({ state: 'detached' });
        expect(await parts.dialog.isVisible()).toBe(true);
        expect(watched.record.pageErrors).toEqual([]);
      } finally {
        await watched.close();
      }
    },
    60_000,
  );
});
