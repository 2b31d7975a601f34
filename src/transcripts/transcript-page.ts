/**
 * The transcript as a self-contained HTML page a teammate reads on a phone: who the customer
 * is, on which channel, then every message in order — customer on the left, assistant on the
 * right, each labelled and timed, with a note on replies that never reached the customer.
 * The page loads nothing and runs nothing (its one stylesheet is pinned by hash in the CSP);
 * every piece of stored text goes through `escapeHtml`, never into markup as it is.
 */
import { createHash } from 'node:crypto';
import type { MessageRecord } from '../store/transcript-store.js';
import { MEDIA_CSP, MEDIA_STYLE, renderMessageMedia } from './transcript-media.js';

export interface TranscriptPageInput {
  conversation: { id: string; channel: string; address: string; displayName?: string | undefined };
  messages: readonly Pick<MessageRecord, 'direction' | 'text' | 'status' | 'createdAt' | 'errorCode' | 'errorMessage' | 'media'>[];
  generatedAt: Date;
  /** A message's media address, signed like the page's link (see transcript-media.ts). */
  mediaUrl?: (mediaId: string) => string;
}

const STYLE = `
:root { color-scheme: light dark; --ink: #1b1f24; --muted: #5c6670; --line: #d9dee3; --page: #f6f7f9;
  --customer: #ffffff; --assistant: #dcf3e6; --warn-ink: #8a1c1c; --warn-bg: #fdeaea; }
@media (prefers-color-scheme: dark) { :root { --ink: #e8eaed; --muted: #a0a8b0; --line: #3a4048; --page: #15181c;
  --customer: #22272e; --assistant: #1d3a2c; --warn-ink: #ffb4b4; --warn-bg: #4a1f1f; } }
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
${MEDIA_STYLE}
`.trim();

/** The page's Content-Security-Policy: nothing may load or run; only its own stylesheet applies. */
export const TRANSCRIPT_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`,
  ...MEDIA_CSP,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const htmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => htmlEntities[character] ?? character);
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

function statusNote(message: TranscriptPageInput['messages'][number]): string {
  const note = message.direction === 'outbound' ? statusNotes[message.status] : undefined;
  if (!note) return '';
  const detail = [message.errorCode ? `error ${message.errorCode}` : '', message.errorMessage ?? ''].filter(Boolean).join(': ');
  return `<p class="status">${escapeHtml(detail ? `${note} · ${detail}` : note)}</p>`;
}

function renderMessages(messages: TranscriptPageInput['messages'], mediaUrl: TranscriptPageInput['mediaUrl']): string {
  if (messages.length === 0) return '<p class="empty">No messages yet.</p>';
  const parts: string[] = [];
  let day = '';
  for (const message of messages) {
    const createdAt = new Date(message.createdAt);
    const messageDay = dayFormat.format(createdAt);
    if (messageDay !== day) {
      if (day) parts.push('</ol>');
      parts.push(`<h2>${escapeHtml(messageDay)}</h2>`, '<ol>');
      day = messageDay;
    }
    const [kind, author] = message.direction === 'inbound' ? ['customer', 'Customer'] : ['assistant', 'Assistant'];
    parts.push(
      `<li class="${kind}"><article>` +
        `<p class="meta"><span class="author">${author}</span> · <time datetime="${createdAt.toISOString()}">${timeFormat.format(createdAt)}</time></p>` +
        `<p class="text">${escapeHtml(message.text)}</p>${renderMessageMedia(message.media, mediaUrl)}${statusNote(message)}` +
        '</article></li>',
    );
  }
  parts.push('</ol>');
  return parts.join('\n');
}

export function renderTranscriptPage(input: TranscriptPageInput): string {
  const { conversation, messages, generatedAt, mediaUrl } = input;
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
<dt>Messages</dt><dd>${messages.length}</dd>
</dl>
</header>
${renderMessages(messages, mediaUrl)}
<footer>Times in UTC · generated ${escapeHtml(stampFormat.format(generatedAt))} UTC</footer>
</main>
</body>
</html>
`;
}
