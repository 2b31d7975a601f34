/**
 * What a teammate receives: who the customer is, what they want in one line, what the
 * assistant established, the last messages, a one-tap way to reach them and the transcript
 * link — as plain text (WhatsApp), Slack-compatible `{ text, blocks }` (webhooks) and the
 * variables of a WhatsApp Content template.
 *
 * Everything the customer or the model wrote (profile name, reason, messages, fact values) is
 * untrusted: it is put on one line without control or bidi characters, then escaped for each
 * destination — Slack mrkdwn gets `&`, `<`, `>` as entities (so `<!channel>` pings nobody and
 * `<https://evil|Open transcript>` shows as typed), WhatsApp gets its formatting markers
 * replaced by look-alikes where they could open or close formatting. It must never put
 * untrusted text into a destination unescaped.
 */
import { changeLines, SUMMARY_DETAIL_MARK } from '../contracts/action-summary.js';
import type { HandoffRecord } from './handoff-store.js';
import { outOfHoursLines } from './out-of-hours.js';
import type { Team } from './teams.js';

export interface Notice {
  /** WhatsApp free text. */
  text: string;
  /** The JSON body posted to a Slack-compatible webhook (`text` is Slack's notification fallback, mrkdwn too). */
  webhook: { text: string; blocks: Record<string, unknown>[] };
  /** WhatsApp Content template variables: one line each, within the caps below. */
  templateVariables: Record<string, string>;
}

const NAME_CHARS = 80;
const REASON_CHARS = 200;
const MESSAGE_CHARS = 160;
const FACT_CHARS = 120;
const CHANGE_CHARS = 300;
/** The most changes a notice lists (the transcript page shows them all). */
const NOTICE_CHANGES = 3;

/** Cuts at `chars` UTF-16 units without splitting a surrogate pair. */
function clip(text: string, chars: number): string {
  if (text.length <= chars) return text;
  let end = chars - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

// Control characters, bidi overrides/isolates and marks: they can forge lines or reorder what a teammate reads.
const INVISIBLE = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** Untrusted text on one clipped line, with nothing that rearranges or hides what follows it. */
function untrusted(text: string, chars: number): string {
  return clip(text.replace(INVISIBLE, ' ').replace(/\s+/g, ' ').trim(), chars);
}

/** Slack mrkdwn: the three characters Slack asks apps to escape, in every text field. */
function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const WHATSAPP_LOOKALIKES: Record<string, string> = { '*': '∗', _: 'ˍ', '~': '∼', '`': 'ˋ' };

/**
 * WhatsApp has no escape character: a formatting marker next to a word edge (`*bold*`,
 * `_italic_`, `~strike~`, backticks) becomes a look-alike; one inside a word (`john_doe`,
 * `2*3`) never formats and stays, so emails and ids read as typed.
 */
function defuseWhatsapp(text: string): string {
  return text.replace(/(?<![\p{L}\p{N}])[*_~`]|[*_~`](?![\p{L}\p{N}])/gu, (marker) => WHATSAPP_LOOKALIKES[marker] ?? marker);
}

/** A WhatsApp contact as its number (`+…`), whatever address form the channel stored. */
const whatsappNumber = (contact: string) => contact.replace(/^[^+\d]+/, '');

/** The fastest way to reach the customer: a wa.me link, a mailto or a tel link. */
function reachLink(handoff: HandoffRecord): string {
  if (handoff.contact.whatsapp) return `https://wa.me/${whatsappNumber(handoff.contact.whatsapp).replace(/^\+/, '')}`;
  if (handoff.contact.email) return `mailto:${encodeURI(handoff.contact.email)}`;
  if (handoff.contact.phone) return `tel:${handoff.contact.phone.replace(/[^\d+]/g, '')}`;
  return 'no contact given';
}

/**
 * The notice's parts with untrusted text on one clipped line: `escapeText` applies to what the
 * customer or the model wrote, `escapeContact` to validated contact details.
 */
function parts(handoff: HandoffRecord, escapeText: (text: string) => string, escapeContact: (text: string) => string) {
  const name = handoff.customer.name ? escapeText(untrusted(handoff.customer.name, NAME_CHARS)) : 'Unnamed customer';
  const via = handoff.contact.whatsapp
    ? `WhatsApp ${whatsappNumber(handoff.contact.whatsapp)}`
    : [handoff.contact.email, handoff.contact.phone].filter(Boolean).join(', ') || `${handoff.channel} chat`;
  // The facts the role chose to share (the hand-off tool leaves out its private ones).
  const facts = Object.entries(handoff.facts).filter(([, value]) => value !== null && value !== '');
  return {
    who: `${name} (${escapeContact(untrusted(via, NAME_CHARS))})`,
    wants: escapeText(untrusted(handoff.reason, REASON_CHARS)),
    established: facts.length
      ? facts.map(([key, value]) => `${escapeText(untrusted(key.replace(/_/g, ' '), 40))}: ${escapeText(untrusted(String(value), FACT_CHARS))}`).join(' · ')
      : 'nothing beyond the request',
    // The service wrote each summary, but from arguments the model chose: untrusted like the rest.
    changes: (handoff.actions ?? [])
      .slice(0, NOTICE_CHANGES)
      .map((action) => escapeText(untrusted(changeLines(action).join(' ').replaceAll(SUMMARY_DETAIL_MARK, '· '), CHANGE_CHARS))),
    lastMessages: (handoff.lastMessages ?? [])
      .slice(-6)
      .map((message) => `${message.direction === 'inbound' ? 'Customer' : 'Assistant'}: ${escapeText(untrusted(message.text, MESSAGE_CHARS))}`),
  };
}

export function buildNotice(input: { handoff: HandoffRecord; team: Team; transcriptUrl: string; business: string }): Notice {
  const { handoff, team, transcriptUrl } = input;
  const reach = reachLink(handoff);
  const header = `New hand-off to ${team.label} — ${input.business}`;
  // Opened while the team was closed: what the customer was promised (out-of-hours.ts).
  const hours = outOfHoursLines(team, handoff);
  const plain = (escapeText: (text: string) => string, lines: ReturnType<typeof parts>, answerHere: string[] = []) =>
    [
      escapeText(header),
      `Who: ${lines.who}`,
      `Wants: ${lines.wants}`,
      ...hours.map(escapeText),
      `Established: ${lines.established}`,
      ...(lines.changes.length ? ['Waiting for your approval (run or decline it on the transcript page):', ...lines.changes.map((line) => `  ${line}`)] : []),
      'Last messages:',
      ...lines.lastMessages.map((line) => `  ${line}`),
      `Reach them: ${escapeText(reach)}`,
      ...answerHere,
      `Transcript: ${escapeText(transcriptUrl)}`,
    ].join('\n');
  const whatsapp = parts(handoff, defuseWhatsapp, (text) => text);
  const slack = parts(handoff, escapeSlack, escapeSlack);
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(header, 150) } },
    {
      type: 'section',
      fields: [
        { type: 'mrkdwn', text: `*Who*\n${slack.who}` },
        { type: 'mrkdwn', text: `*Wants*\n${slack.wants}` },
      ],
    },
    { type: 'section', text: { type: 'mrkdwn', text: `*Established*\n${slack.established}` } },
    ...hours.map((line) => ({ type: 'context', elements: [{ type: 'mrkdwn', text: escapeSlack(line) }] })),
    ...(slack.changes.length
      ? [
          {
            type: 'section',
            text: {
              type: 'mrkdwn',
              text: `*Waiting for your approval* (run or decline it on the transcript page)\n${slack.changes.map((line) => `• ${line}`).join('\n')}`,
            },
          },
        ]
      : []),
    { type: 'section', text: { type: 'mrkdwn', text: `*Last messages*\n${slack.lastMessages.map((line) => `> ${line}`).join('\n') || '_none_'}` } },
    {
      type: 'actions',
      elements: [
        {
          type: 'button',
          text: { type: 'plain_text', text: 'Reach the customer' },
          url: reach.startsWith('http') || reach.startsWith('mailto') || reach.startsWith('tel') ? reach : transcriptUrl,
        },
        { type: 'button', text: { type: 'plain_text', text: 'Open transcript' }, url: transcriptUrl },
      ],
    },
    { type: 'context', elements: [{ type: 'mrkdwn', text: escapeSlack(`Hand-off ${handoff._id} · ${handoff.channel} · role ${handoff.roleId}`) }] },
  ];
  return {
    // On WhatsApp the teammate answers right there: by reply-to, or the short code where a client can't reply to a message.
    text: plain(
      (text) => text,
      whatsapp,
      handoff.shortCode ? [`Answer here: reply to this message, or start yours with #${handoff.shortCode}. #done hands back.`] : [],
    ),
    webhook: { text: plain(escapeSlack, slack), blocks },
    templateVariables: { '1': whatsapp.who, '2': whatsapp.wants, '3': reach, '4': transcriptUrl },
  };
}
