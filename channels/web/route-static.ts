/**
 * The widget's public routes: CORS preflights, the script (versioned, long-cached), its word
 * catalogues, and the demo page.
 */
import type { Router } from 'express';
import { demoPage } from './demo-page.js';
import type { RouteKit } from './route-kit.js';
import { DEMO_SITE_KEY } from './sites.js';
import { WIDGET_CATALOGUES } from './widget-catalogues.js';
import { sendWidgetScript } from './widget-script.js';

export function addPreflightRoutes(router: Router, kit: RouteKit): void {
  const { allowOrigin, refuse, settings } = kit;
  // a page on any origin may ask for a session and read why it is refused (403, 404): a
  // widget then tells the site's developer the real reason instead of guessing from a CORS error,
  // and "no answer" means only that the service is unreachable.
  router.options('/api/widget/session', (request, response) => {
    allowOrigin(request, response);
    response.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
    response.set('Access-Control-Allow-Headers', 'content-type');
    response.set('Access-Control-Max-Age', '600');
    response.status(204).end();
  });

  router.options('/api/widget/{*rest}', (request, response) => {
    const origin = request.get('origin');
    if (!settings.sites.anyAllows(origin)) {
      refuse(response, 403, 'this origin is not allowed', 'origin', { origin: origin ?? null });
      return;
    }
    allowOrigin(request, response);
    response.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    response.set('Access-Control-Allow-Headers', 'authorization, content-type, last-event-id');
    response.set('Access-Control-Max-Age', '600');
    response.status(204).end();
  });
}

export function addScriptRoutes(router: Router, kit: RouteKit): void {
  const { settings } = kit;
  // the script itself (compressed), not a redirect: one round trip less before the launcher shows.
  router.get('/widget.js', async (request, response) => {
    // Revalidated on every load (a 304 while unchanged): a deploy reaches every page at once.
    sendWidgetScript(request, response, await settings.widget(), 'public, no-cache');
  });

  // the widget's words in a language other than English, fetched only by a widget that speaks it.
  router.get('/widget/i18n/:language.json', (request, response) => {
    const catalogue = Object.hasOwn(WIDGET_CATALOGUES, request.params.language) ? WIDGET_CATALOGUES[request.params.language] : undefined;
    response.set('Access-Control-Allow-Origin', '*');
    if (!catalogue) {
      response.status(404).json({ error: 'no such language' });
      return;
    }
    response.set('Cache-Control', 'public, max-age=86400').json(catalogue);
  });

  // the widget's lazily loaded parts (the chat), named by their content hash: immutable.
  const partBundles = new Map<string, { code: string; version: string }>();
  router.get('/widget/part/:file', async (request, response) => {
    const { file } = request.params;
    const parts = (await settings.widget()).parts ?? {};
    const code = Object.hasOwn(parts, file) ? parts[file] : undefined;
    if (code === undefined) {
      // A page still running the widget.js of an earlier build asks for that build's part: it gets this one's.
      const current = /^chat-[0-9a-f]{12}\.js$/.test(file) ? Object.keys(parts).find((name) => name.startsWith('chat-')) : undefined;
      response.set({ 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'no-store' });
      if (current) response.redirect(302, `/widget/part/${current}`);
      else response.status(404).json({ error: 'no such widget part' });
      return;
    }
    let part = partBundles.get(file);
    if (part?.code !== code) partBundles.set(file, (part = { code, version: file.replace(/\.js$/, '') }));
    sendWidgetScript(request, response, part, 'public, max-age=31536000, immutable');
  });

  router.get('/widget/:version/widget.js', async (request, response) => {
    const bundle = await settings.widget();
    if (request.params.version !== bundle.version) {
      response.redirect(302, `/widget/${bundle.version}/widget.js`);
      return;
    }
    sendWidgetScript(request, response, bundle, 'public, max-age=31536000, immutable');
  });

  router.get('/demo', (_request, response) => {
    const site = settings.sites.get(DEMO_SITE_KEY);
    if (!site) {
      response.status(404).json({ error: 'no demo site is configured (WEB_SITES has no "demo" site)' });
      return;
    }
    response.set('Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:");
    response.type('html').send(demoPage(site));
  });
}
