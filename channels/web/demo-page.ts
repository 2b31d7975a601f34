/**
 * The demo page the service serves at /demo: a plain page that embeds the widget exactly as a
 * business would, under a strict Content-Security-Policy. The snippet is inline code that wraps
 * (a <pre> widened a 390 px phone's page to 485 px and pushed the launcher off-screen).
 */
import type { Site } from './sites.js';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

export function demoPage(site: Site): string {
  return `<!doctype html>
<html lang="${site.language ?? 'en'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(site.name)} — widget demo</title>
</head>
<body>
<main>
<h1>${escapeHtml(site.name)}</h1>
<p>This page embeds the chat widget with one script tag. Open the chat in the corner to talk to the assistant.</p>
<p><code>&lt;script src="/widget.js" data-site-key="${escapeHtml(site.key)}" async&gt;&lt;/script&gt;</code></p>
</main>
<script src="/widget.js" data-site-key="${escapeHtml(site.key)}" async></script>
</body>
</html>
`;
}
