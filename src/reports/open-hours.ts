/**
 * How much of a wait fell within a team's opening hours (`hours` in HANDOFF_TEAMS): the first
 * reply "within team hours", as an owner reads it — a reply 40 s after the team opened on Monday
 * waited 40 s, however long the weekend was. A team without hours is always open. Spans are whole
 * local minutes, so the end of an open stretch is found a minute at a time; a closed stretch is
 * skipped to the next opening at once. Pure.
 */
import { isOpen, nextOpening, type TeamHours } from '../handoff/team-hours.js';

const MINUTE_MS = 60_000;

/** Milliseconds of [from, to) during which the team was open. */
export function openMsBetween(hours: TeamHours | undefined, from: number, to: number): number {
  if (!hours) return Math.max(0, to - from);
  let total = 0;
  let cursor = from;
  while (cursor < to) {
    const opening = nextOpening(hours, cursor);
    if (opening === undefined || opening >= to) break;
    cursor = opening;
    let end = Math.floor(cursor / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
    while (end < to && isOpen(hours, end)) end += MINUTE_MS;
    const stop = Math.min(end, to);
    total += stop - cursor;
    cursor = stop;
  }
  return total;
}
