/**
 * What a teammate receives: who the customer is, what they want in one line, what the
 * assistant established, the last messages, a one-tap way to reach them and the transcript
 * link — as plain text (WhatsApp), Slack-compatible `{ text, blocks }` (webhooks) and the
 * variables of a WhatsApp Content template.
 */
import type { HandoffRecord } from './handoff-store.js';
import type { Team } from './teams.js';

export interface Notice {
  text: string;
  blocks: Record<string, unknown>[];
  templateVariables: Record<string, string>;
}

const clip = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars - 1)}…` : text);
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The fastest way to reach the customer: a wa.me link, a mailto or a tel link. */
function reachLink(handoff: HandoffRecord): string {
  const whatsapp = handoff.contact.whatsapp ?? (handoff.customer.address.startsWith('whatsapp:') ? handoff.customer.address : undefined);
  if (whatsapp) return `https://wa.me/${whatsapp.replace(/^whatsapp:\+?/, '')}`;
  if (handoff.contact.email) return `mailto:${handoff.contact.email}`;
  if (handoff.contact.phone) return `tel:${handoff.contact.phone.replace(/[^\d+]/g, '')}`;
  return 'no contact given';
}

function who(handoff: HandoffRecord): string {
  const name = handoff.customer.name ?? 'Unnamed customer';
  const via =
    handoff.channel === 'whatsapp'
      ? `WhatsApp ${handoff.customer.address.replace(/^whatsapp:/, '')}`
      : [handoff.contact.email, handoff.contact.phone].filter(Boolean).join(', ') || 'website chat';
  return `${name} (${via})`;
}

function established(handoff: HandoffRecord): string {
  const entries = Object.entries(handoff.facts).filter(([key, value]) => value !== null && value !== '' && key !== 'handoffUnavailable');
  return entries.length ? entries.map(([key, value]) => `${key.replace(/_/g, ' ')}: ${String(value)}`).join(' · ') : 'nothing beyond the request';
}

export function buildNotice(input: { handoff: HandoffRecord; team: Team; transcriptUrl: string; business: string }): Notice {
  const { handoff, team, transcriptUrl } = input;
  const recent = handoff.lastMessages ?? [];
  const wants = clip(oneLine(handoff.reason), 200);
  const lastMessages = recent
    .slice(-6)
    .map((message) => `${message.direction === 'inbound' ? 'Customer' : 'Assistant'}: ${clip(oneLine(message.text), 160)}`);
  const reach = reachLink(handoff);
  const header = `New hand-off to ${team.label} — ${input.business}`;
  const text = [
    header,
    `Who: ${who(handoff)}`,
    `Wants: ${wants}`,
    `Established: ${established(handoff)}`,
    'Last messages:',
    ...lastMessages.map((line) => `  ${line}`),
    `Reach them: ${reach}`,
    `Transcript: ${transcriptUrl}`,
  ].join('\n');
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(header, 150) } },
    {
      type: 'section',
      fields: [
        { type: 'mrkdwn', text: `*Who*\n${who(handoff)}` },
        { type: 'mrkdwn', text: `*Wants*\n${wants}` },
      ],
    },
    { type: 'section', text: { type: 'mrkdwn', text: `*Established*\n${established(handoff)}` } },
    { type: 'section', text: { type: 'mrkdwn', text: `*Last messages*\n${lastMessages.map((line) => `> ${line}`).join('\n') || '_none_'}` } },
    {
      type: 'actions',
      elements: [
        { type: 'button', text: { type: 'plain_text', text: 'Reach the customer' }, url: reach.startsWith('http') || reach.startsWith('mailto') || reach.startsWith('tel') ? reach : transcriptUrl },
        { type: 'button', text: { type: 'plain_text', text: 'Open transcript' }, url: transcriptUrl },
      ],
    },
    { type: 'context', elements: [{ type: 'mrkdwn', text: `Hand-off ${handoff._id} · ${handoff.channel} · role ${handoff.roleId}` }] },
  ];
  return {
    text,
    blocks,
    templateVariables: { '1': who(handoff), '2': wants, '3': reach, '4': transcriptUrl },
  };
}
