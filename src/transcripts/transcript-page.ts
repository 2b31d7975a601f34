/**
 * The transcript as a self-contained HTML page a teammate reads on a phone: who the customer
 * is, on which channel, what the website attached (labelled as its word, not verified), then
 * every message in order — customer on the left, assistant and teammates on the right, each
 * labelled and timed, with a note on replies that never reached the customer. The live page adds who has the conversation, "Take over", "Hand back to the
 * assistant", "Close" and a reply box, and one script (allowed by a per-response nonce) that
 * streams new messages in and posts the actions. It loads nothing else (its one stylesheet is
 * pinned by hash in the CSP); every piece of stored text goes through `escapeHtml`, never into
 * markup as it is, and the script's settings travel as JSON that cannot close its element.
 */
import { createHash } from 'node:crypto';
import type { MessageRecord } from '../store/transcript-store.js';
import { LIVE_PAGE_SCRIPT } from './live-page-script.js';
import { actionStateText, awaitsTeam, changeText, type PageAction } from './page-actions.js';
import { renderReplyGuidance, type PageGuidanceEntry, type ReplyGuidance } from './page-guidance.js';
import { ratingStars, ratingText, type PageRating } from './page-ratings.js';
import { MEDIA_CSP, MEDIA_STYLE, renderMessageMedia } from './transcript-media.js';

/** One message as the page shows it. */
export interface PageMessage {
  id: string;
  author: 'customer' | 'assistant' | 'teammate' | 'system';
  /** The teammate's name (author `teammate`). */
  name?: string | undefined;
  text: string;
  createdAt: Date;
  status?: MessageRecord['status'] | undefined;
  errorCode?: string | undefined;
  errorMessage?: string | undefined;
  /** Photos, voice notes and documents of an inbound message (shown through signed media links). */
  media?: MessageRecord['media'];
  /** An assistant reply's guidance: the entries its prompt quoted and those that applied. */
  guidance?: ReplyGuidance | undefined;
}

/** What the live page shows and may do; absent, the page is the plain transcript. */
export interface LivePageSettings {
  /** The nonce this response's CSP allows the page's script by. */
  nonce: string;
  /** Posted with every action, with the link's own parts. */
  csrf: string;
  link: { expires: string; sig: string };
  /** The hand-off the page acts on (the conversation's taken one, else its newest open one). */
  handoff: { id: string; team: string; teamLabel: string; status: string; holder: string | undefined } | undefined;
  /** The team's configured members: the page asks which of them is acting. Empty: a free name. */
  members: readonly string[];
  maxReplyChars: number;
}

export interface TranscriptPageInput {
  conversation: {
    id: string;
    channel: string;
    address: string;
    displayName?: string | undefined;
    /** What the website attached to the conversation (the widget's `setData`): its word, not verified. */
    siteData?: Readonly<Record<string, unknown>> | undefined;
  };
  messages: readonly PageMessage[];
  generatedAt: Date;
  live?: LivePageSettings | undefined;
  /** A message's media address, signed like the page's link (see transcript-media.ts). */
  mediaUrl?: (mediaId: string) => string;
  /** The changes the assistant proposed in this conversation (confirmed actions), shown where they happened. */
  actions?: readonly PageAction[];
  /** The customer's answers to the satisfaction question, shown where they answered. */
  ratings?: readonly PageRating[];
  /** The guidance entries the replies name, as the guidance feature knows them (see page-guidance.ts). */
  guidanceEntries?: ReadonlyMap<string, PageGuidanceEntry>;
}

const STYLE = `
:root { color-scheme: light dark; --ink: #1b1f24; --muted: #5c6670; --line: #d9dee3; --page: #f6f7f9;
  --customer: #ffffff; --assistant: #dcf3e6; --teammate: #dde8fb; --accent: #1d4ed8; --warn-ink: #8a1c1c; --warn-bg: #fdeaea; }
@media (prefers-color-scheme: dark) { :root { --ink: #e8eaed; --muted: #a0a8b0; --line: #3a4048; --page: #15181c;
  --customer: #22272e; --assistant: #1d3a2c; --teammate: #1e2e4d; --accent: #8fb0ff; --warn-ink: #ffb4b4; --warn-bg: #4a1f1f; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--ink);
  font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 42rem; margin: 0 auto; padding: 1rem 0.875rem 2.5rem; }
header { border-bottom: 1px solid var(--line); padding-bottom: 0.75rem; margin-bottom: 0.5rem; }
h1 { font-size: 1.25rem; margin: 0 0 0.5rem; }
dl { display: grid; grid-template-columns: auto 1fr; gap: 0.125rem 0.75rem; margin: 0; font-size: 0.9375rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 0.8125rem; font-weight: 600; color: var(--muted); text-align: center; margin: 1.25rem 0 0.5rem; }
ol { list-style: none; margin: 0; padding: 0; }
li { display: flex; flex-direction: column; margin: 0.375rem 0; }
article { max-width: 85%; padding: 0.5rem 0.75rem; border-radius: 0.75rem; border: 1px solid var(--line); }
.customer { align-items: flex-start; }
.customer article { background: var(--customer); border-bottom-left-radius: 0.25rem; }
.assistant { align-items: flex-end; }
.assistant article { background: var(--assistant); border-bottom-right-radius: 0.25rem; }
.meta { margin: 0 0 0.125rem; font-size: 0.75rem; color: var(--muted); }
.author { font-weight: 600; }
.text { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.status { margin: 0.375rem 0 0; padding: 0.125rem 0.375rem; border-radius: 0.25rem; font-size: 0.75rem;
  color: var(--warn-ink); background: var(--warn-bg); }
.empty, footer { color: var(--muted); text-align: center; font-size: 0.875rem; }
footer { margin-top: 2rem; }
.teammate { align-items: flex-end; }
.teammate article { background: var(--teammate); border-bottom-right-radius: 0.25rem; }
.system { align-items: center; }
.system article { background: transparent; border-style: dashed; font-size: 0.875rem; color: var(--muted); }
.control { position: sticky; top: 0; z-index: 1; background: var(--page); border-bottom: 1px solid var(--line);
  padding: 0.625rem 0; margin-bottom: 0.5rem; display: grid; gap: 0.5rem; }
.state { margin: 0; font-weight: 600; }
.who { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; font-size: 0.9375rem; }
.actions { display: flex; gap: 0.5rem; flex-wrap: wrap; }
button, select, input, textarea { font: inherit; color: inherit; }
select, input, textarea { min-height: 2.75rem; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--customer); }
button { min-height: 2.75rem; padding: 0.5rem 0.875rem; border: 1px solid var(--accent); border-radius: 0.5rem;
  background: var(--customer); color: var(--accent); font-weight: 600; cursor: pointer; }
button.primary { background: var(--accent); color: var(--page); }
button:disabled { opacity: 0.45; cursor: not-allowed; }
.reply { position: sticky; bottom: 0; background: var(--page); border-top: 1px solid var(--line); padding: 0.625rem 0 0.75rem;
  margin-top: 1rem; display: grid; grid-template-columns: 1fr auto; gap: 0.5rem; align-items: end; }
.reply label { grid-column: 1 / -1; font-size: 0.875rem; color: var(--muted); }
.reply textarea { width: 100%; min-height: 3.5rem; resize: vertical; }
.notice { grid-column: 1 / -1; margin: 0; font-size: 0.875rem; color: var(--warn-ink); }
.notice:empty { display: none; }
.live { color: var(--muted); font-size: 0.8125rem; margin: 0; }
.action article { border-style: solid; border-color: var(--accent); color: var(--ink); max-width: 100%; }
.action .text { font-size: 0.9375rem; }
.action-state { margin: 0.375rem 0 0; font-size: 0.8125rem; font-weight: 600; }
.action .actions { margin-top: 0.5rem; }
.site-data h2 { text-align: left; margin: 0.75rem 0 0.25rem; }
.guidance { margin: 0.25rem 0 0; font-size: 0.75rem; color: var(--muted); overflow-wrap: anywhere; }
.stars { color: #b7791f; letter-spacing: 0.0625rem; margin-right: 0.375rem; }
${MEDIA_STYLE}
`.trim();

const STYLE_SOURCE = `'sha256-${createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`;

/** The Content-Security-Policy of refusals and the plain transcript: nothing may load or run; only its own stylesheet applies. */
export const TRANSCRIPT_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${STYLE_SOURCE}`,
  ...MEDIA_CSP,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The live page's: its one script by this response's nonce, and requests (actions, the event stream) to its own origin only. */
export function livePageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_SOURCE}`,
    `script-src 'nonce-${nonce}'`,
    ...MEDIA_CSP,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const htmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => htmlEntities[character] ?? character);
}

/** The website's data, labelled as its word: each key and value escaped (only text values are shown). */
function renderSiteData(data: Readonly<Record<string, unknown>> | undefined): string {
  const entries = Object.entries(data ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
  if (entries.length === 0) return '';
  const rows = entries.map(([key, value]) => `<dt>${escapeHtml(key)}</dt><dd>${escapeHtml(value)}</dd>`).join('\n');
  return `<section class="site-data" aria-labelledby="site-data-title">
<h2 id="site-data-title">Provided by the website, not verified</h2>
<dl id="site-data">
${rows}
</dl>
</section>`;
}

/** Notes for outbound messages the customer may not have received; delivered ones need none. */
const statusNotes: Partial<Record<MessageRecord['status'], string>> = {
  failed: 'Not delivered',
  undelivered: 'Not delivered',
  uncertain: 'Delivery unknown',
  pending: 'Not sent',
  sending: 'Not sent',
};

// Rendered in UTC: the page runs no script that could use the reader's time zone.
const dayFormat = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', weekday: 'short', day: 'numeric', month: 'long', year: 'numeric' });
const timeFormat = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', hour: '2-digit', minute: '2-digit' });
const stampFormat = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', dateStyle: 'medium', timeStyle: 'short' });

/** JSON safe inside a <script> element: no "<" can start "</script>" or "<!--". */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const authorClass: Record<PageMessage['author'], string> = { customer: 'customer', assistant: 'assistant', teammate: 'teammate', system: 'system' };

function authorLabel(message: PageMessage): string {
  if (message.author === 'teammate') return message.name ?? 'Teammate';
  return { customer: 'Customer', assistant: 'Assistant', system: 'Service' }[message.author];
}

function statusNote(message: PageMessage): string {
  const note = message.author !== 'customer' && message.status ? statusNotes[message.status] : undefined;
  if (!note) return '';
  const detail = [message.errorCode ? `error ${message.errorCode}` : '', message.errorMessage ?? ''].filter(Boolean).join(': ');
  return `<p class="status">${escapeHtml(detail ? `${note} · ${detail}` : note)}</p>`;
}

function renderAction(action: PageAction, live: boolean, now: number): string {
  const createdAt = new Date(action.createdAt);
  const controls =
    live && awaitsTeam(action, now)
      ? `<div class="actions"><button type="button" class="primary" data-run="${escapeHtml(action.id)}">Run it</button>` +
        `<button type="button" data-decline="${escapeHtml(action.id)}">Decline</button></div>`
      : '';
  return (
    `<li class="system action" data-action-id="${escapeHtml(action.id)}"><article>` +
    `<p class="meta"><span class="author">Change proposed</span> · <time datetime="${createdAt.toISOString()}">${timeFormat.format(createdAt)}</time></p>` +
    `<p class="text">${escapeHtml(changeText(action))}</p>` +
    `<p class="action-state" role="status">${escapeHtml(actionStateText(action, now))}</p>${controls}` +
    '</article></li>'
  );
}

function renderRating(rating: PageRating): string {
  const at = new Date(rating.at);
  const comment = rating.comment ? `<p class="text">“${escapeHtml(rating.comment)}”</p>` : '';
  return (
    `<li class="system rating" data-rating-id="${escapeHtml(rating.id)}"><article>` +
    `<p class="meta"><span class="author">Satisfaction</span> · <time datetime="${at.toISOString()}">${timeFormat.format(at)}</time></p>` +
    `<p class="text"><span class="stars" aria-hidden="true">${ratingStars(rating.score)}</span>${escapeHtml(ratingText(rating))}</p>${comment}` +
    '</article></li>'
  );
}

type Entry =
  | { at: Date; message: PageMessage; action?: never; rating?: never }
  | { at: Date; action: PageAction; message?: never; rating?: never }
  | { at: Date; rating: PageRating; message?: never; action?: never };

type RenderInput = Pick<TranscriptPageInput, 'messages' | 'mediaUrl' | 'actions' | 'ratings' | 'live' | 'generatedAt' | 'guidanceEntries'>;

function renderMessages(input: RenderInput): string {
  const { messages, mediaUrl } = input;
  const entries: Entry[] = [
    ...messages.map((message) => ({ at: new Date(message.createdAt), message })),
    ...(input.actions ?? []).map((action) => ({ at: new Date(action.createdAt), action })),
    ...(input.ratings ?? []).map((rating) => ({ at: new Date(rating.at), rating })),
  ].sort((left, right) => left.at.getTime() - right.at.getTime());
  if (entries.length === 0) return '<p class="empty">No messages yet.</p>';
  const parts: string[] = [];
  let day = '';
  for (const entry of entries) {
    const createdAt = entry.at;
    const messageDay = dayFormat.format(createdAt);
    if (messageDay !== day) {
      if (day) parts.push('</ol>');
      parts.push(`<h2>${escapeHtml(messageDay)}</h2>`, '<ol>');
      day = messageDay;
    }
    if (entry.action) {
      parts.push(renderAction(entry.action, Boolean(input.live?.handoff), input.generatedAt.getTime()));
      continue;
    }
    if (entry.rating) {
      parts.push(renderRating(entry.rating));
      continue;
    }
    const { message } = entry;
    parts.push(
      `<li class="${authorClass[message.author]}" data-id="${escapeHtml(message.id)}"><article>` +
        `<p class="meta"><span class="author">${escapeHtml(authorLabel(message))}</span> · <time datetime="${createdAt.toISOString()}">${timeFormat.format(createdAt)}</time></p>` +
        `<p class="text">${escapeHtml(message.text)}</p>${renderMessageMedia(message.media, mediaUrl)}${statusNote(message)}` +
        renderReplyGuidance(message.guidance, input.guidanceEntries) +
        '</article></li>',
    );
  }
  parts.push('</ol>');
  return parts.join('\n');
}

function stateText(handoff: LivePageSettings['handoff']): string {
  if (!handoff) return 'No open hand-off: the assistant has this conversation.';
  if (handoff.status === 'taken') return `${handoff.holder ?? 'A teammate'} has this conversation; the assistant is silent.`;
  return `Handed to ${handoff.teamLabel}: the assistant still answers until someone takes over.`;
}

function renderControls(live: LivePageSettings): string {
  const who = live.members.length
    ? `<select id="teammate" name="teammate"><option value="">Choose your name…</option>${live.members
        .map((name) => `<option>${escapeHtml(name)}</option>`)
        .join('')}</select>`
    : '<input id="teammate" name="teammate" autocomplete="name" maxlength="40" placeholder="Your name">';
  return `<section class="control" aria-label="Conversation controls">
<p class="state" id="state" role="status">${escapeHtml(stateText(live.handoff))}</p>
<div class="who"><label for="teammate">You are</label>${who}</div>
<div class="actions">
<button type="button" id="take" class="primary">Take over</button>
<button type="button" id="hand-back">Hand back to the assistant</button>
<button type="button" id="close">Close</button>
</div>
<p class="live" id="live" role="status">Connecting for live updates…</p>
</section>`;
}

function renderReplyBox(live: LivePageSettings): string {
  return `<form class="reply" id="reply-form" novalidate>
<label for="reply">Reply to the customer (taking the conversation over)</label>
<textarea id="reply" name="reply" rows="2" maxlength="${live.maxReplyChars}"></textarea>
<button type="submit" class="primary" id="send">Send</button>
<p class="notice" id="notice" role="alert"></p>
</form>`;
}

function liveConfig(conversationId: string, live: LivePageSettings): string {
  const config = {
    conversationId,
    expires: live.link.expires,
    sig: live.link.sig,
    csrf: live.csrf,
    handoff: live.handoff ?? null,
    members: live.members,
    maxReplyChars: live.maxReplyChars,
  };
  return `<script type="application/json" id="live-config">${scriptJson(config)}</script>
<script nonce="${escapeHtml(live.nonce)}">${LIVE_PAGE_SCRIPT}</script>`;
}

export function renderTranscriptPage(input: TranscriptPageInput): string {
  const { conversation, messages, generatedAt, live } = input;
  const customer = conversation.displayName ? `${conversation.displayName} (${conversation.address})` : conversation.address;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>Conversation transcript</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<header>
<h1>Conversation transcript</h1>
<dl>
<dt>Customer</dt><dd>${escapeHtml(customer)}</dd>
<dt>Channel</dt><dd>${escapeHtml(conversation.channel)}</dd>
<dt>Messages</dt><dd id="message-count">${messages.length}</dd>
</dl>
${renderSiteData(conversation.siteData)}
</header>
${live ? renderControls(live) : ''}
<div id="log">
${renderMessages(input)}
</div>
${live ? renderReplyBox(live) : ''}
<footer>Times in UTC · generated ${escapeHtml(stampFormat.format(generatedAt))} UTC</footer>
</main>
${live ? liveConfig(conversation.id, live) : ''}
</body>
</html>
`;
}
