/**
 * A site's signed-in user through the real widget in headless Chromium: the page carries
 * data-user-id, data-user-ts and data-user-hash as the README tells a site developer to render
 * them; the widget passes them on at session start, and the service binds the user only while
 * the hash is within WEB_IDENTITY_MAX_AGE_SECONDS of its issue time.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { writeWidgetBundle } from '../../scripts/build-widget.js';
import { DESKTOP, launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { storedVisitor } from '../support/widget-page.js';

const SECRET = 'browser-identity-secret-0123456789abcdef';
let harness: Harness;
let chromium: LaunchedBrowser;
let server: Server;
let origin: string;

/** The page a site's backend renders for a signed-in user (README "Verified website visitors"). */
function signedInPage(user: { id: string }, ts: number): string {
  const payload = [user.id, '', '', String(ts)].join('\n');
  const hash = createHmac('sha256', SECRET).update(payload).digest('hex');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Account</title></head><body><main><h1>Your account</h1></main>
<script src="${origin}/widget.js" data-site-key="id-site" data-user-id="${user.id}" data-user-ts="${ts}" data-user-hash="${hash}" async></script>
</body></html>`;
}

beforeAll(async () => {
  await writeWidgetBundle();
  const port = await findFreePort();
  origin = `http://127.0.0.1:${port}`;
  harness = await startHarness({
    worker: false,
    env: { WEB_SITES: JSON.stringify([{ key: 'id-site', name: 'Harbour Lane', origins: [origin], identitySecret: SECRET }]) },
  });
  await harness.services.contacts.upsert({ address: 'user:u-amelia', name: 'Amelia Hart', entities: [{ id: 'acct-77', name: 'Harbour Lane Bakery' }] });
  const app = harness.services.app;
  server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', origin);
    if (url.pathname === '/host/account') {
      response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(signedInPage({ id: 'u-amelia' }, Number(url.searchParams.get('ts'))));
      return;
    }
    if (url.pathname === '/favicon.ico') {
      response.writeHead(204).end();
      return;
    }
    app(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  chromium = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await chromium?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await harness?.close();
});

/** Loads the page issued at `ts`, and returns who the service says the widget's visitor is. */
async function visitorOnPageIssuedAt(ts: number) {
  const watched = await chromium.newPage(DESKTOP);
  try {
    await watched.page.goto(`${origin}/host/account?ts=${ts}`);
    const stored = await eventually(async () => {
      const visitor = await storedVisitor(watched.page, 'id-site').catch(() => undefined);
      return visitor?.token ? visitor : undefined;
    });
    expect(watched.record.pageErrors).toEqual([]);
    const posted = await harness.http
      .post('/api/widget/messages')
      .set('Origin', origin)
      .set('Authorization', `Bearer ${stored.token}`)
      .send({ clientMessageId: `browser-identity-${ts}`, text: 'show my account' });
    expect(posted.status).toBe(202);
    const batch = await harness.services.inbox.batch(stored.conversationId!, 1);
    await harness.services.inbox.acknowledge(stored.conversationId!, batch!);
    return harness.services.channels.get('web')!.identify!(batch!.entries[0]!.message);
  } finally {
    await watched.close();
  }
}

describe('the widget on a signed-in page', () => {
  test("a freshly issued hash signs the visitor in as the site's user", async () => {
    expect((await visitorOnPageIssuedAt(Math.floor(Date.now() / 1000)))?.name).toBe('Amelia Hart');
  });

  test('a page whose hash was issued beyond WEB_IDENTITY_MAX_AGE_SECONDS leaves the visitor anonymous', async () => {
    expect(await visitorOnPageIssuedAt(Math.floor(Date.now() / 1000) - 2 * 3600)).toBeUndefined();
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'widget-identity-rejected', reason: 'expired' }));
  });
});
