/** Hand-offs to the team: teams, notices, and a teammate's takeover (idle hand-back, relayed media links, late replies). */
import { z } from 'zod';
import { positiveInt } from './fields.js';

export const handoffFields = {
  HANDOFF_TEAMS: z.string().optional(),
  NOTICE_ATTEMPTS: positiveInt(6),
  NOTICE_BACKOFF_MS: positiveInt(5000),
  // Takeover: a takeover with no teammate message for this long hands back by itself (decimals allowed).
  TAKEOVER_IDLE_MINUTES: z.coerce
    .number({ error: 'expected a number of minutes' })
    .positive()
    .max(7 * 24 * 60)
    .default(30),
  // How long the signed link to a customer's photo, PDF or voice note relayed to a teammate's WhatsApp works (Twilio fetches it at once).
  TAKEOVER_MEDIA_LINK_MINUTES: z.coerce
    .number({ error: 'expected a number of minutes' })
    .int()
    .min(5)
    .max(7 * 24 * 60)
    .default(60),
  // Approved template (Twilio Content SID, one variable: the reply) for the assistant's replies outside WhatsApp's 24-hour window.
  WHATSAPP_LATE_REPLY_CONTENT_SID: z
    .string()
    .regex(/^HX[0-9a-fA-F]{32}$/, 'expected a Content SID: HX followed by 32 hex digits')
    .optional(),
};
