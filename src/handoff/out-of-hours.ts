/**
 * A hand-off while its team is closed (`hours` in HANDOFF_TEAMS): the hand-off and its notices
 * are recorded as always, but the customer is told, in their language and with the team's name
 * in it, when a person will answer — by the service itself, with the turn's reply, whatever the
 * model writes (the model is only told the sentence was sent); the team's WhatsApp notices are held until it opens (webhooks go at once, for on-call
 * tools) unless the team sets `notifyOutOfHours`; and the response time the team promises counts
 * from the opening. Everything is decided from the hand-off's creation time, so each retry and
 * each destination reads the same opening.
 */
import { fill, hoursWords } from '../words/hours-words.js';
import type { Language } from '../words/language.js';
import { teamName } from '../words/team-words.js';
import { nextOpening, zoneAbbreviation, type TeamHours } from './team-hours.js';
import type { Destination, Team, TeamId } from './teams.js';

/** WhatsApp's customer service window: a free-form reply more than this after the customer's last message needs a template. */
const WHATSAPP_WINDOW_MS = 24 * 60 * 60 * 1000;
/** An opening this far off is named with its date, not only its weekday. */
const WEEK_MS = 6 * 24 * 60 * 60 * 1000;

export interface ClosedTeam {
  /** When the team opens (ms since the epoch). */
  opensAt: number;
  /** The customer's sentence, in their language: the service sends it with the turn's reply. */
  customerText: string;
  /** What the assistant is told: the team is closed, and that the service sends that sentence (or, where it can't, to say it). */
  nextSteps: string;
}

/** When the team next opens, if it is closed at `at`; undefined while it is open (or has no hours). */
function closedUntil(team: Team, at: number): number | undefined {
  if (!team.hours) return undefined;
  const opening = nextOpening(team.hours, at);
  // No opening within the look-ahead: treated as open (the notices go, nothing is promised).
  return opening === undefined || opening === at ? undefined : opening;
}

/** "Monday at 9:00 (CET)" in `language`, the weekday with its date when it is a week or more after `at`. */
function describeOpening(hours: TeamHours, opensAt: number, at: number, language: Language): string {
  const timeZone = hours.timeZone;
  const far = opensAt - at >= WEEK_MS;
  const day = new Intl.DateTimeFormat(language, { timeZone, weekday: 'long', ...(far ? { day: 'numeric', month: 'long' } : {}) }).format(opensAt);
  const time = new Intl.DateTimeFormat(language, { timeZone, hour: 'numeric', minute: '2-digit', hourCycle: 'h23' }).format(opensAt);
  return fill(hoursWords(language).when, { day, time, zone: zoneAbbreviation(timeZone, opensAt) });
}

/** What a hand-off to a closed team tells the customer and the assistant; undefined while the team is open. */
export function closedTeam(input: {
  teamId: TeamId;
  team: Team;
  at: number;
  language: Language;
  reachedHere?: string | undefined;
  /** The service sends `customerText` itself: the assistant is told so, not asked to say it. */
  serviceSays?: boolean | undefined;
}): ClosedTeam | undefined {
  const { team, at, language } = input;
  const opensAt = closedUntil(team, at);
  if (opensAt === undefined || !team.hours) return undefined;
  const when = describeOpening(team.hours, opensAt, at, language);
  const words = hoursWords(language);
  const name = teamName({ id: input.teamId, label: team.label, labels: team.labels }, language);
  const customerText = fill(input.reachedHere ? words.backHere : words.backLater, { team: name, when });
  const english = describeOpening(team.hours, opensAt, at, 'en');
  return {
    opensAt,
    customerText,
    nextSteps:
      `The ${team.label} is closed right now: the hand-off is recorded, and they are back ${english} and will answer ${team.responseTime} from then. ` +
      (input.serviceSays
        ? `The service sends the customer this message itself, with your reply: "${customerText}" Do not repeat it, and do not promise anything sooner.`
        : `Tell the customer so, in these words: "${customerText}" Do not promise anything sooner.`) +
      ' Keep helping the customer meanwhile.',
  };
}

/** Until when a notice to `destination` waits for the team to open (ms since the epoch); undefined: send it now. */
export function noticeHeldUntil(team: Team, destination: Pick<Destination, 'kind'>, handoffCreatedAt: Date, now: number): number | undefined {
  if (destination.kind !== 'whatsapp' || team.notifyOutOfHours) return undefined;
  const opensAt = closedUntil(team, handoffCreatedAt.getTime());
  return opensAt !== undefined && opensAt > now ? opensAt : undefined;
}

/** Whether a notice to `destination` waited (or waits) for the team's opening: its hand-off was opened while the team was closed. */
export function heldForOpening(team: Team, destination: Pick<Destination, 'kind'>, handoffCreatedAt: Date): boolean {
  return noticeHeldUntil(team, destination, handoffCreatedAt, handoffCreatedAt.getTime()) !== undefined;
}

/**
 * The notice's out-of-hours lines for a hand-off opened while the team was closed: what the
 * customer was promised (the response time counts from the opening), and a warning when the
 * customer's WhatsApp window closes before then (a reply must go as the team's template).
 */
export function outOfHoursLines(team: Team, handoff: { createdAt: Date; contact: { whatsapp?: string | undefined } }): string[] {
  const at = handoff.createdAt.getTime();
  const opensAt = closedUntil(team, at);
  if (opensAt === undefined || !team.hours) return [];
  return [
    `Out of hours: the customer was told you are back ${describeOpening(team.hours, opensAt, at, 'en')} and will answer ${team.responseTime} from then.`,
    ...(handoff.contact.whatsapp && opensAt - at >= WHATSAPP_WINDOW_MS
      ? ["Their WhatsApp 24-hour window closes before you open: a reply then goes out as the team's reply template."]
      : []),
  ];
}
