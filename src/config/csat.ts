/** The satisfaction question (CSAT): on or off, when it is asked, how often, and how long a comment is waited for. */
import { z } from 'zod';

const minutes = (fallback: number, max: number) => z.coerce.number({ error: 'expected a number of minutes' }).positive().max(max).default(fallback);

export const csatFields = {
  CSAT_ENABLED: z.stringbool({ error: 'expected true or false' }).default(false),
  // A conversation the assistant handled alone is asked this long after its last reply, if the customer wrote nothing since (decimals allowed).
  CSAT_AFTER_MINUTES: minutes(30, 24 * 60),
  // A conversation is never asked twice within this many hours.
  CSAT_COOLDOWN_HOURS: z.coerce
    .number({ error: 'expected a number of hours' })
    .nonnegative()
    .max(90 * 24)
    .default(24),
  // After a rating, the customer's next message within this long is taken as its comment (unless it asks a question).
  CSAT_COMMENT_MINUTES: minutes(15, 24 * 60),
};
