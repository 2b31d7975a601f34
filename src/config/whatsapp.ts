/** The WhatsApp channel (Twilio): on with all three TWILIO_* variables, off with none. */
import { z } from 'zod';
import { httpUrl } from './fields.js';

export const whatsappFields = {
  // WhatsApp is on with all three, off with none (a widget-only site); see `whatsappGroupIssues`.
  TWILIO_ACCOUNT_SID: z
    .string()
    .regex(/^AC[0-9a-fA-F]{32}$/, 'expected an Account SID: AC followed by 32 hex digits')
    .optional(),
  TWILIO_AUTH_TOKEN: z.string().min(16, 'expected the account auth token (32 characters)').optional(),
  TWILIO_WHATSAPP_FROM: z
    .string()
    .regex(/^whatsapp:\+[1-9]\d{6,14}$/, 'expected the WhatsApp sender as whatsapp:+<E.164 number>')
    .optional(),
  TWILIO_API_BASE_URL: httpUrl.optional(),
};

const TWILIO_GROUP = ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_WHATSAPP_FROM'] as const;

/**
 * The variables that go together: WhatsApp needs all three TWILIO_* (a partial set names what is
 * missing), and without a Twilio token to derive them from, the widget needs its own secret.
 */
export function channelGroupIssues(present: Record<string, unknown>): string[] {
  const given = TWILIO_GROUP.filter((name) => present[name] !== undefined);
  if (given.length === TWILIO_GROUP.length) return [];
  if (given.length > 0) {
    return TWILIO_GROUP.filter((name) => present[name] === undefined).map(
      (name) => `${name}: is required with ${given.join(' and ')} (WhatsApp needs all three TWILIO_* variables; set none to run the widget alone)`,
    );
  }
  return present.WIDGET_TOKEN_SECRET === undefined
    ? ['WIDGET_TOKEN_SECRET: is required without TWILIO_AUTH_TOKEN to derive it from (at least 32 random characters, e.g. openssl rand -hex 32)']
    : [];
}
