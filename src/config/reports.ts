/** The owner's reports: the time zone whose days they count in. */
import { z } from 'zod';

function ianaZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone === 'UTC' || zone.includes('/');
  } catch {
    return false;
  }
}

export const reportsFields = {
  // The shop's IANA time zone (e.g. Europe/Madrid): a report's days are its local days (a message at 23:30 UTC may count on the next day).
  REPORTS_TIME_ZONE: z.string().trim().default('UTC').refine(ianaZone, 'expected an IANA time zone (e.g. Europe/Madrid) or UTC'),
};

export interface ReportsConfig {
  /** IANA time zone of the reports' days. */
  timeZone: string;
}

type ReportsEnv = z.infer<z.ZodObject<typeof reportsFields>>;

export const reportsConfig = (env: ReportsEnv): ReportsConfig => ({ timeZone: env.REPORTS_TIME_ZONE });
