/**
 * The guidance page's HTML, beside the reports (`/admin/reports/guidance`, the reports' sign-in):
 * the live version and whether the draft differs, the draft's entries (each with a remove button),
 * a form to add one, publish, run the saved simulations (page-simulations.ts), roll back to a
 * version, and which version each process holds. No script at all; one style sheet, inline and
 * allowed by its hash (`GUIDANCE_PAGE_CSP`), light or dark by `prefers-color-scheme`.
 */
import { createHash } from 'node:crypto';
import { escapeHtml } from '../reports/charts.js';
import type { GuidanceEntry } from './model.js';
import { renderSimulations } from './page-simulations.js';
import type { GuidanceOverview } from './service.js';
import type { SimulationResult } from './simulation-model.js';

const STYLE = `
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --card: #f6f8fa; --accent: #1f6feb; --focus: #8250df; --error: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #30363d; --card: #161b22; --accent: #58a6ff; --focus: #d2a8ff; --error: #ff7b72; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.4rem; margin: 0 0 12px; }
h2 { font-size: 1.1rem; margin: 24px 0 8px; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
form.stack { display: grid; gap: 10px; max-width: 640px; }
form.row { display: flex; flex-wrap: wrap; gap: 12px; align-items: end; }
label { display: flex; flex-direction: column; font-size: 0.85rem; color: var(--muted); }
input, select, textarea, button { font: inherit; color: var(--fg); background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; }
textarea { min-height: 6em; }
button { cursor: pointer; background: var(--accent); color: var(--bg); border-color: var(--accent); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 10px; text-align: left; vertical-align: top; }
.note { color: var(--muted); }
.error { color: var(--error); font-weight: 600; }
.done { font-weight: 600; }
`;

/** The page's Content-Security-Policy: nothing but its own hashed style and forms to itself. */
export const GUIDANCE_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  'img-src data:',
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const layout = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><link rel="icon" href="data:,"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;

function scopeText(entry: GuidanceEntry): string {
  const { roles, channels, sites, audience } = entry.scope;
  const parts = [roles && `roles: ${roles.join(', ')}`, channels && `channels: ${channels.join(', ')}`, sites && `sites: ${sites.join(', ')}`];
  if (audience?.verified !== undefined) parts.push(audience.verified ? 'verified customers' : 'unverified customers');
  if (audience?.entities) parts.push(`entities: ${audience.entities.join(', ')}`);
  if (audience?.emailDomains) parts.push(`email at: ${audience.emailDomains.join(', ')}`);
  if (entry.team) parts.push(`hands over to ${entry.team}`);
  return parts.filter(Boolean).join('; ') || 'everywhere';
}

function entryRow(base: string, entry: GuidanceEntry): string {
  return `<tr><td>${escapeHtml(entry.category)}</td><td>${escapeHtml(entry.text)}</td><td>${escapeHtml(scopeText(entry))}</td><td><form method="post" action="${base}/entries/${entry.id}/delete"><button type="submit" aria-label="Remove entry ${entry.id}">Remove</button></form></td></tr>`;
}

const option = (value: string, label = value) => `<option value="${escapeHtml(value)}">${escapeHtml(label)}</option>`;

const ADD_FORM = (base: string) =>
  `<form class="stack" method="post" action="${base}/entries"><label>Category<select name="category">${['style', 'clarification', 'escalation', 'policy'].map((value) => option(value)).join('')}</select></label><label>Text (up to 2,000 characters; {{contact.first_name}} and the like are filled from verified data only)<textarea name="text" maxlength="2000" required></textarea></label><label>Roles (comma-separated; empty: all)<input type="text" name="roles"></label><label>Channels (comma-separated; empty: all)<input type="text" name="channels"></label><label>Sites (comma-separated; empty: all)<input type="text" name="sites"></label><label>Hand over to (escalation only)<select name="team">${option('', 'no team')}${option('support')}${option('sales')}</select></label><button type="submit">Add to the draft</button></form>`;

/** The page; `message` a line above it (done, or an error with its details). */
export function renderGuidance(
  base: string,
  overview: GuidanceOverview,
  message?: { error?: string; done?: string; details?: string[] },
  results?: readonly SimulationResult[],
): string {
  const live = overview.live
    ? `Live: version ${overview.live.version}, ${overview.live.entries.length} entries, published ${escapeHtml(overview.live.publishedAt)}.`
    : 'Nothing published yet.';
  const status = message?.error
    ? `<div role="alert"><p class="error">${escapeHtml(message.error)}</p>${message.details?.length ? `<ul>${message.details.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>` : ''}</div>`
    : message?.done
      ? `<p class="done" role="status">${escapeHtml(message.done)}</p>`
      : '';
  const rows = overview.draft.length ? overview.draft.map((entry) => entryRow(base, entry)).join('') : '<tr><td colspan="4">The draft is empty.</td></tr>';
  const versions = overview.versions.length
    ? `<form class="row" method="post" action="${base}/rollback"><label>Version to restore<select name="version">${[...overview.versions]
        .reverse()
        .map((version) => option(String(version)))
        .join('')}</select></label><button type="submit">Roll back to it</button></form>`
    : '<p class="note">No version to roll back to.</p>';
  const workers = overview.workers.length
    ? `<ul>${overview.workers.map((worker) => `<li>${escapeHtml(worker.process)}: version ${worker.version}</li>`).join('')}</ul>`
    : '<p class="note">No process has reported yet.</p>';
  const body = `<h1>Guidance</h1><p><a href="${base.replace(/\/guidance$/, '')}">Reports</a></p>${status}<p>${live}${overview.unpublished ? ' The draft has changes not published yet.' : ''}</p><form method="post" action="${base}/publish"><button type="submit">Publish the draft</button></form><section aria-labelledby="h-draft"><h2 id="h-draft">Draft</h2><div class="scroll"><table><thead><tr><th scope="col">Category</th><th scope="col">Text</th><th scope="col">Applies to</th><th scope="col">Remove</th></tr></thead><tbody>${rows}</tbody></table></div></section><section aria-labelledby="h-add"><h2 id="h-add">Add an entry</h2>${ADD_FORM(base)}</section>${renderSimulations(base, results)}<section aria-labelledby="h-versions"><h2 id="h-versions">Versions</h2>${versions}</section><section aria-labelledby="h-workers"><h2 id="h-workers">Processes</h2>${workers}</section>`;
  return layout('Guidance', body);
}
