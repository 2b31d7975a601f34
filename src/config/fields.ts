/** Field types the configuration sections share. */
import { z } from 'zod';

export const positiveInt = (fallback: number) => z.coerce.number({ error: 'expected a positive integer' }).int().positive().default(fallback);

export const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).transform((value) => value.replace(/\/+$/, ''));

/** A variable holding JSON: parsed here, so the schema piped after it sees the value. */
export const jsonText = () =>
  z.string().transform((text, context) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      context.addIssue({ code: 'custom', message: 'expected JSON' });
      return z.NEVER;
    }
  });
