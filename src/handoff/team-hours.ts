/**
 * A team's opening hours (`hours` in HANDOFF_TEAMS): an IANA time zone, a weekly schedule of
 * local spans (`"mon": ["09:00-13:00", "14:00-18:00"]`, a day left out is closed) and closed
 * local dates (`"2026-12-25"`). Time zones come from Intl (the runtime's ICU data), so a DST
 * change moves the opening with the wall clock: Monday 9:00 in Paris is 08:00 UTC in winter and
 * 07:00 UTC in summer. Everything here is pure: the caller passes the instant.
 */
import { z } from 'zod';

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
type Day = (typeof DAYS)[number];

/** How far ahead an opening is looked for (closed dates may cover a long stretch). */
const LOOKAHEAD_DAYS = 400;

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone.includes('/') || zone === 'UTC';
  } catch {
    return false;
  }
}

const minutesOf = (clock: string) => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));

const SpanSchema = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d-(([01]\d|2[0-3]):[0-5]\d|24:00)$/, 'expected a span of local time, HH:MM-HH:MM (e.g. 09:00-18:00)')
  .refine((span) => minutesOf(span.slice(0, 5)) < minutesOf(span.slice(6)), 'a span must end after it starts (split one that crosses midnight)');

const SpansSchema = z.array(SpanSchema).max(6);

export const HoursSchema = z
  .strictObject({
    /** IANA time zone the schedule and closed dates are in, e.g. Europe/Madrid. */
    timeZone: z.string().refine(validZone, 'expected an IANA time zone (e.g. Europe/Madrid)'),
    weekly: z.strictObject({
      mon: SpansSchema.optional(),
      tue: SpansSchema.optional(),
      wed: SpansSchema.optional(),
      thu: SpansSchema.optional(),
      fri: SpansSchema.optional(),
      sat: SpansSchema.optional(),
      sun: SpansSchema.optional(),
    }),
    /** Local dates the team is closed all day (holidays). */
    closed: z.array(z.iso.date('expected a date, YYYY-MM-DD')).max(400).default([]),
  })
  .refine((hours) => Object.values(hours.weekly).some((spans) => spans && spans.length > 0), {
    message: 'expected at least one open span in the weekly schedule',
    path: ['weekly'],
  });
export type TeamHours = z.infer<typeof HoursSchema>;

const partsFormats = new Map<string, Intl.DateTimeFormat>();

/** The wall clock in `zone` at `at`: its local date, weekday, minutes since midnight and the zone's offset (ms). */
function wallClock(zone: string, at: number): { date: string; day: Day; minutes: number; offsetMs: number } {
  let format = partsFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    partsFormats.set(zone, format);
  }
  const part = Object.fromEntries(format.formatToParts(new Date(at)).map(({ type, value }) => [type, value]));
  const [year, month, day, hour, minute, second] = [part.year, part.month, part.day, part.hour, part.minute, part.second].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  const date = `${part.year}-${part.month}-${part.day}`;
  return { date, day: dayOf(date), minutes: hour * 60 + minute, offsetMs: asUtc - (at - (at % 1000)) };
}

function dayOf(date: string): Day {
  return DAYS[new Date(`${date}T00:00:00Z`).getUTCDay()] ?? 'sun';
}

function addDays(date: string, days: number): string {
  const next = new Date(`${date}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + days);
  return next.toISOString().slice(0, 10);
}

/** The instant a local wall-clock time of `zone` names (a time a DST gap skips lands just after it). */
function zonedInstant(zone: string, date: string, minutes: number): number {
  const wall = new Date(`${date}T00:00:00Z`).getTime() + minutes * 60_000;
  const first = wall - wallClock(zone, wall).offsetMs;
  return wall - wallClock(zone, first).offsetMs;
}

function spansOf(hours: TeamHours, day: Day): [number, number][] {
  return (hours.weekly[day] ?? []).map((span): [number, number] => [minutesOf(span.slice(0, 5)), minutesOf(span.slice(6))]).sort((a, b) => a[0] - b[0]);
}

/**
 * When the team is next open at or after `at`: `at` itself while it is open, the start of its
 * next span otherwise; undefined when no span opens within the look-ahead (every day closed).
 */
export function nextOpening(hours: TeamHours, at: number): number | undefined {
  const now = wallClock(hours.timeZone, at);
  const closed = new Set(hours.closed);
  for (let offset = 0; offset <= LOOKAHEAD_DAYS; offset += 1) {
    const date = addDays(now.date, offset);
    if (closed.has(date)) continue;
    for (const [start, end] of spansOf(hours, dayOf(date))) {
      if (offset === 0 && start <= now.minutes && now.minutes < end) return at;
      const opening = zonedInstant(hours.timeZone, date, start);
      if (opening > at) return opening;
    }
  }
  return undefined;
}

export function isOpen(hours: TeamHours | undefined, at: number): boolean {
  return !hours || nextOpening(hours, at) === at;
}

/** The zone's short name at `at` in English (`CET`, `CEST`, `EDT`), or its offset (`GMT+4`) where English has none. */
export function zoneAbbreviation(zone: string, at: number): string {
  const names = ['en-GB', 'en-US'].map(
    (locale) =>
      new Intl.DateTimeFormat(locale, { timeZone: zone, timeZoneName: 'short' }).formatToParts(new Date(at)).find((part) => part.type === 'timeZoneName')
        ?.value ?? zone,
  );
  return names.find((name) => !/^(GMT|UTC)([+-]|$)/.test(name)) ?? names[0] ?? zone;
}
