/**
 * The README's two pictures, taken from the running service: the widget on the service's own
 * /demo page answering a visitor who asks for a demo, and the hand-off notice that conversation
 * sends the sales team's WhatsApp (its text exactly as the fake Twilio API received it, drawn in
 * a chat bubble). Each run writes them to test-artifacts/; `UPDATE_DOCS_IMAGES=1` also writes
 * them to docs/images/ (commit them when the widget or the notice changes).
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { afterAll, describe, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { launchBrowser, saveScreenshot, type LaunchedBrowser } from '../support/browser.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { openWidget, waitForText } from '../support/widget-page.js';

const SALES_PHONE = 'whatsapp:+34600000101';
const REPLY = 'Done. Our sales team will contact you at amelia@example.com within one business day to set up your demo.';

const assistant: Script = (call) => {
  if (call.toolResults.length > 0) return { text: REPLY };
  if (/demo/i.test(call.userText) && call.toolNames.includes('book_sales_call')) {
    return { toolCalls: [{ name: 'book_sales_call', input: { reason: 'Demo of the Pro plan for a team of 12', email: 'amelia@example.com' } }] };
  }
  return { text: 'Happy to help.' };
};

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const bubblePage = (text: string) => `<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; background: #efeae2; font: 15px/1.4 system-ui, sans-serif; }
header { background: #075e54; color: #fff; padding: 14px 18px; font-weight: 600; }
.bubble { background: #fff; margin: 18px; padding: 10px 12px; border-radius: 8px; max-width: 460px; white-space: pre-wrap; overflow-wrap: anywhere; box-shadow: 0 1px 1px rgba(0,0,0,.15); }
</style></head><body><header>Harbour Lane (assistant)</header><div class="bubble">${escapeHtml(text)}</div></body></html>`;

let harness: Harness | undefined;
let server: Server | undefined;
let chromium: LaunchedBrowser | undefined;
afterAll(async () => {
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await harness?.close();
});

describe('the README pictures', () => {
  test('the widget answering on /demo, and the hand-off notice it sends', async () => {
    await writeWidgetBundle();
    const port = await findFreePort();
    const origin = `http://127.0.0.1:${port}`;
    harness = await startHarness({
      script: assistant,
      env: {
        PUBLIC_BASE_URL: origin,
        BUSINESS_NAME: 'Harbour Lane',
        HANDOFF_TEAMS: JSON.stringify({
          sales: {
            label: 'Sales team',
            members: [{ name: 'Ana', whatsapp: SALES_PHONE }],
            bookingUrl: 'https://cal.example.com/sales',
            responseTime: 'within one business day',
          },
        }),
      },
    });
    server = createServer(harness.services.app);
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    chromium = await launchBrowser();
    const { page } = await chromium.newPage({ width: 1000, height: 760 });
    await page.goto(`${origin}/demo`);
    const parts = await openWidget(page);
    await parts.input.fill("Hi! We're a team of 12 and would like a demo of the Pro plan — amelia@example.com");
    await parts.send.click();
    await waitForText(parts.assistantBubbles.last(), REPLY, 20_000);
    const widgetShot = await saveScreenshot(page, 'readme-widget');

    const notice = await eventually(() => harness!.twilio.messages.find((message) => message.to === SALES_PHONE), 20_000);
    expect(notice.body).toContain('Sales team');
    expect(notice.body).toContain('Demo of the Pro plan for a team of 12');
    expect(notice.body).toContain('amelia@example.com');
    const { page: phone } = await chromium.newPage({ width: 520, height: 560 });
    await phone.setContent(bubblePage(notice.body));
    const noticeShot = await saveScreenshot(phone, 'readme-handoff-notice');

    if (process.env.UPDATE_DOCS_IMAGES === '1') {
      mkdirSync('docs/images', { recursive: true });
      copyFileSync(widgetShot, 'docs/images/widget.png');
      copyFileSync(noticeShot, 'docs/images/handoff-notice.png');
    }
  }, 90_000);
});
