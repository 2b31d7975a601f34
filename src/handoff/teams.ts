/**
 * The teams a conversation can be handed to and where their notices go, from HANDOFF_TEAMS
 * (JSON): per team a label, WhatsApp numbers and/or Slack-compatible webhook URLs, an optional
 * Twilio Content template for WhatsApp notices, a booking link and the response time the
 * customer is promised.
 */
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { formatIssues } from '../errors/issues.js';

const TEAM_IDS = ['sales', 'support'] as const;
export type TeamId = (typeof TEAM_IDS)[number];

const TeamSchema = z.object({
  label: z.string().min(1).max(60),
  whatsapp: z
    .array(z.string().regex(/^whatsapp:\+[1-9]\d{6,14}$/, 'expected whatsapp:+<E.164 number>'))
    .max(20)
    .default([]),
  webhooks: z
    .array(z.url({ protocol: /^https?$/ }))
    .max(20)
    .default([]),
  /** Twilio Content template (HX…) for WhatsApp notices: team members are usually outside the 24-hour window. */
  contentSid: z
    .string()
    .regex(/^HX[0-9a-fA-F]{32}$/, 'expected a Content SID: HX followed by 32 hex digits')
    .optional(),
  bookingUrl: z.url({ protocol: /^https$/ }).optional(),
  responseTime: z.string().min(1).max(80).default('within one business day'),
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

export function destinationsOf(team: Team): Destination[] {
  return [
    ...team.whatsapp.map((number): Destination => ({ id: number, kind: 'whatsapp', target: number })),
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
