/**
 * The teams a conversation can be handed to and where their notices go, from HANDOFF_TEAMS
 * (JSON): per team a label, WhatsApp numbers and/or Slack-compatible webhook URLs, an optional
 * Twilio Content template for WhatsApp notices, a booking link and the response time the
 * customer is promised; its members (name, WhatsApp number, optional email), who take a
 * conversation over from their own WhatsApp, and the approved template their replies go out as
 * outside WhatsApp's 24-hour window. A message from a member's number is never a customer turn.
 */
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { formatIssues } from '../errors/issues.js';
import { LANGUAGES } from '../words/language.js';
import { HoursSchema } from './team-hours.js';

const TEAM_IDS = ['sales', 'support'] as const;
export type TeamId = (typeof TEAM_IDS)[number];

const whatsappNumber = z.string().regex(/^whatsapp:\+[1-9]\d{6,14}$/, 'expected whatsapp:+<E.164 number>');
const contentSid = z.string().regex(/^HX[0-9a-fA-F]{32}$/, 'expected a Content SID: HX followed by 32 hex digits');

const MemberSchema = z.strictObject({
  name: z.string().trim().min(1).max(40),
  whatsapp: whatsappNumber,
  email: z.email().optional(),
});

const TeamSchema = z.object({
  /** The team's name in English: notices, and the service's English words to customers ("Our support team is back…"). */
  label: z.string().min(1).max(60),
  /** The team's name in other languages, read after "our" (`{"es": "equipo de soporte"}`); the service's own name for a sales or support team where none is given. */
  labels: z.partialRecord(z.enum(LANGUAGES), z.string().trim().min(1).max(60)).optional(),
  whatsapp: z.array(whatsappNumber).max(20).default([]),
  webhooks: z
    .array(z.url({ protocol: /^https?$/ }))
    .max(20)
    .default([]),
  /** Twilio Content template (HX…) for WhatsApp notices: team members are usually outside the 24-hour window. */
  contentSid: contentSid.optional(),
  /** Team members: their replies reach the customer signed with their name; they also get the notices. */
  members: z.array(MemberSchema).max(50).default([]),
  /** Twilio Content template (HX…, one variable `{{1}}` = the teammate's signed text) for replies outside the 24-hour window. */
  replyContentSid: contentSid.optional(),
  bookingUrl: z.url({ protocol: /^https$/ }).optional(),
  responseTime: z.string().min(1).max(80).default('within one business day'),
  /** Opening hours (team-hours.ts): outside them the customer is told when the team is back, and WhatsApp notices wait for it. */
  hours: HoursSchema.optional(),
  /** Send WhatsApp notices at once even while the team is closed. */
  notifyOutOfHours: z.boolean().optional(),
});
export type Team = z.infer<typeof TeamSchema>;

export const TeamsSchema = z.object({ sales: TeamSchema.optional(), support: TeamSchema.optional() }).strict();
export type Teams = z.infer<typeof TeamsSchema>;

export interface Destination {
  /** Stable within a hand-off: `whatsapp:+…` or `webhook:<n>`. */
  id: string;
  kind: 'whatsapp' | 'webhook';
  target: string;
}

/** A team's WhatsApp numbers: its notice numbers and its members', once each. */
function whatsappNumbers(team: Team): string[] {
  return [...new Set([...team.whatsapp, ...team.members.map((member) => member.whatsapp)])];
}

export function destinationsOf(team: Team): Destination[] {
  return [
    ...whatsappNumbers(team).map((number): Destination => ({ id: number, kind: 'whatsapp', target: number })),
    ...team.webhooks.map((url, index): Destination => ({ id: `webhook:${index}`, kind: 'webhook', target: url })),
  ];
}

export function parseTeams(json: string | undefined): Teams {
  if (!json) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new ConfigError('invalid configuration: HANDOFF_TEAMS: expected a JSON object keyed by team (sales, support)');
  }
  const parsed = TeamsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration: HANDOFF_TEAMS: ${formatIssues(parsed.error.issues, '(teams)')}`);
  }
  return parsed.data;
}

/** Someone of a team, as a WhatsApp message from their number identifies them. */
export interface TeamIdentity {
  team: TeamId;
  name: string;
  whatsapp: string;
}

/**
 * The team members a WhatsApp number belongs to (one per team it is in): a member by their
 * configured name; a team's notice number without a member entry by the team's label. An
 * unknown number gets none: it is a customer.
 */
export function teamMembersByNumber(teams: Teams): ReadonlyMap<string, TeamIdentity[]> {
  const byNumber = new Map<string, TeamIdentity[]>();
  for (const id of TEAM_IDS) {
    const team = teams[id];
    if (!team) continue;
    for (const number of whatsappNumbers(team)) {
      const member = team.members.find((candidate) => candidate.whatsapp === number);
      byNumber.set(number, [...(byNumber.get(number) ?? []), { team: id, name: member?.name ?? team.label, whatsapp: number }]);
    }
  }
  return byNumber;
}
