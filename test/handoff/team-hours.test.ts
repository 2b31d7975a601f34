/**
 * Team hours on a clock the test controls: the next opening across a DST change (Paris moves
 * from CET to CEST on 29 March 2026 and back on 25 October) and past a closed date; a malformed
 * `hours` is a start-up error naming the team; a hand-off while the team is closed tells the
 * customer, in their language, when it is back, and its notice says what was promised.
 */
import { describe, expect, test } from '@jest/globals';
import { createHandoffService, type HandoffRequestInput } from '../../src/handoff/handoff-service.js';
import type { HandoffRecord, HandoffStore } from '../../src/handoff/handoff-store.js';
import { buildNotice } from '../../src/handoff/notice.js';
import type { NoticeQueue } from '../../src/handoff/notice-queue.js';
import { closedTeam, noticeHeldUntil } from '../../src/handoff/out-of-hours.js';
import { isOpen, nextOpening, type TeamHours } from '../../src/handoff/team-hours.js';
import { parseTeams, type Team } from '../../src/handoff/teams.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';

const weekdays = ['09:00-18:00'];
const paris: TeamHours = {
  timeZone: 'Europe/Paris',
  weekly: { mon: weekdays, tue: weekdays, wed: weekdays, thu: weekdays, fri: ['09:00-13:00', '14:00-17:00'] },
  closed: ['2026-12-25', '2026-04-06'],
};
const support: Team = {
  label: 'support team',
  whatsapp: ['whatsapp:+34600000202'],
  members: [],
  webhooks: ['https://hooks.example.test/x'],
  responseTime: 'within two hours',
  hours: paris,
};

const at = (iso: string) => new Date(iso).getTime();
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('the next opening', () => {
  test('follows the wall clock across the spring DST change: Monday 9:00 is 08:00 UTC in winter, 07:00 UTC in summer', () => {
    // Friday 20 March, 18:00 CET (after the Friday close at 17:00): Monday 23 March 09:00 CET.
    expect(iso(nextOpening(paris, at('2026-03-20T17:00:00Z')))).toBe('2026-03-23T08:00:00.000Z');
    // Friday 27 March, 17:30 CET; the clocks go forward on Sunday 29th: Monday 30 March 09:00 CEST.
    expect(iso(nextOpening(paris, at('2026-03-27T16:30:00Z')))).toBe('2026-03-30T07:00:00.000Z');
    // And back in October: Friday 23 October 17:30 CEST → Monday 26 October 09:00 CET.
    expect(iso(nextOpening(paris, at('2026-10-23T15:30:00Z')))).toBe('2026-10-26T08:00:00.000Z');
  });

  test('skips a closed date, and is "now" while the team is open', () => {
    // Christmas Eve, Thursday 24 December 18:30 CET: Friday 25th is closed, so Monday 28th 09:00 CET.
    expect(iso(nextOpening(paris, at('2026-12-24T17:30:00Z')))).toBe('2026-12-28T08:00:00.000Z');
    // Easter Monday 6 April 2026 is closed: Sunday → Tuesday 7th 09:00 CEST.
    expect(iso(nextOpening(paris, at('2026-04-05T10:00:00Z')))).toBe('2026-04-07T07:00:00.000Z');
    // Friday's lunch break, then open again at 14:00.
    expect(iso(nextOpening(paris, at('2026-03-20T12:30:00Z')))).toBe('2026-03-20T13:00:00.000Z');
    expect(isOpen(paris, at('2026-03-23T08:00:00Z'))).toBe(true);
    expect(isOpen(paris, at('2026-03-23T07:59:00Z'))).toBe(false);
    expect(isOpen(paris, at('2026-12-25T10:00:00Z'))).toBe(false);
    expect(isOpen(undefined, at('2026-12-25T10:00:00Z'))).toBe(true);
  });

  test('a span that ends at midnight, in a zone west of UTC', () => {
    const late: TeamHours = { timeZone: 'America/New_York', weekly: { sat: ['20:00-24:00'], sun: ['00:00-02:00'] }, closed: [] };
    expect(isOpen(late, at('2026-03-08T04:30:00Z'))).toBe(true); // Saturday 23:30 EST
    expect(isOpen(late, at('2026-03-08T05:30:00Z'))).toBe(true); // Sunday 00:30 EST
    expect(iso(nextOpening(late, at('2026-03-08T08:00:00Z')))).toBe('2026-03-15T00:00:00.000Z'); // next Saturday 20:00 EDT
  });
});

describe('malformed hours are a start-up error naming the team', () => {
  const teams = (hours: unknown) => JSON.stringify({ support: { label: 'Support', whatsapp: ['whatsapp:+34600000202'], hours } });
  test.each([
    [{ timeZone: 'Mars/Olympus', weekly: { mon: weekdays } }, 'support.hours.timeZone: expected an IANA time zone'],
    [{ timeZone: 'Europe/Paris', weekly: { mon: ['9-18'] } }, 'support.hours.weekly.mon.0: expected a span of local time'],
    [{ timeZone: 'Europe/Paris', weekly: { mon: ['18:00-09:00'] } }, 'support.hours.weekly.mon.0: a span must end after it starts'],
    [{ timeZone: 'Europe/Paris', weekly: {} }, 'support.hours.weekly: expected at least one open span'],
    [{ timeZone: 'Europe/Paris', weekly: { mon: weekdays }, closed: ['25/12/2026'] }, 'support.hours.closed.0: expected a date'],
    [{ timeZone: 'Europe/Paris', weekly: { monday: weekdays } }, 'support.hours.weekly: unknown field: monday'],
  ])('%j', (hours, message) => {
    expect(() => parseTeams(teams(hours))).toThrow(message);
  });

  test('well-formed hours parse', () => {
    expect(parseTeams(teams({ timeZone: 'Europe/Paris', weekly: { mon: weekdays } })).support?.hours?.closed).toEqual([]);
  });
});

describe('a hand-off while the team is closed', () => {
  const friday = at('2026-03-27T16:30:00Z'); // 17:30 CET, after Friday's close

  test('tells the customer when the team is back, in their language, with the zone of the opening', () => {
    const en = closedTeam({ teamId: 'support', team: support, at: friday, language: 'en', reachedHere: 'here on WhatsApp' });
    expect(en?.customerText).toBe('Our support team is back Monday at 09:00 (CEST) and will answer here then. Meanwhile I can keep helping you.');
    expect(en?.nextSteps).toContain('within two hours from then');
    expect(closedTeam({ teamId: 'support', team: support, at: friday, language: 'es' })?.customerText).toBe(
      'Nuestro equipo de soporte vuelve el lunes a las 9:00 (CEST) y se pondrá en contacto con usted entonces. Mientras tanto, puedo seguir ayudándole.',
    );
    // The operator's own name for the team in a language wins over the service's.
    const named = { ...support, labels: { de: 'Kundendienst' } };
    expect(closedTeam({ teamId: 'support', team: named, at: friday, language: 'de' })?.customerText).toMatch(/^Unser Kundendienst ist am Montag/);
    expect(closedTeam({ teamId: 'sales', team: support, at: friday, language: 'pt' })?.customerText).toMatch(/^A nossa equipa comercial volta/);
    expect(closedTeam({ teamId: 'support', team: support, at: friday, language: 'de' })?.customerText).toContain('am Montag um 9:00 (CEST)');
    expect(closedTeam({ teamId: 'support', team: support, at: at('2026-03-23T10:00:00Z'), language: 'en' })).toBeUndefined();
    // More than a week away (a run of closed dates): the date too.
    const away = { ...support, hours: { ...paris, closed: ['2026-03-30', '2026-03-31', '2026-04-01', '2026-04-02', '2026-04-03'] } };
    expect(closedTeam({ teamId: 'support', team: away, at: friday, language: 'en' })?.customerText).toContain('Monday, April 6 at 09:00 (CEST)');
  });

  test('the service records the hand-off, queues its notices and answers with the opening', async () => {
    const opened: string[] = [];
    const store = {
      open: async (request: HandoffRecord) => {
        opened.push(request.reason);
        return { handoff: { ...request, _id: 'ho_1', status: 'open', createdAt: new Date(friday) } as HandoffRecord, created: true };
      },
    } as unknown as HandoffStore;
    const queued: string[] = [];
    const notices = { enqueue: async (handoff: HandoffRecord) => void queued.push(handoff._id) } as unknown as NoticeQueue;
    const logger = createLogger({ level: 'error', sink: () => undefined });
    const service = createHandoffService({ teams: { support }, store, notices, logger, metrics: createMetrics(), now: () => friday });
    const request: HandoffRequestInput = {
      team: 'support',
      reason: 'Cannot log in',
      channel: 'whatsapp',
      conversationId: 'whatsapp:+447700900001',
      roleId: 'support',
      customer: { address: 'whatsapp:+447700900001' },
      contact: { whatsapp: 'whatsapp:+447700900001' },
      facts: {},
      lastMessages: [],
      reachedHere: 'here on WhatsApp',
      language: 'fr',
    };
    const outcome = await service.request(request);
    expect(opened).toEqual(['Cannot log in']);
    expect(queued).toEqual(['ho_1']);
    expect(outcome).toMatchObject({ status: 'handed_off', handoffId: 'ho_1', opensAt: '2026-03-30T07:00:00.000Z' });
    expect(outcome.customerText).toBe(
      "Notre équipe d'assistance est de retour lundi à 9:00 (CEST) et vous répondra ici. En attendant, je peux continuer à vous aider.",
    );
  });

  test('its WhatsApp notices wait for the opening, webhooks do not, and the notice says what was promised', () => {
    const createdAt = new Date(friday);
    expect(iso(noticeHeldUntil(support, { kind: 'whatsapp' }, createdAt, friday))).toBe('2026-03-30T07:00:00.000Z');
    expect(noticeHeldUntil(support, { kind: 'webhook' }, createdAt, friday)).toBeUndefined();
    expect(noticeHeldUntil({ ...support, notifyOutOfHours: true }, { kind: 'whatsapp' }, createdAt, friday)).toBeUndefined();
    // Once the team is open, the held notice goes.
    expect(noticeHeldUntil(support, { kind: 'whatsapp' }, createdAt, at('2026-03-30T07:00:00Z'))).toBeUndefined();

    const handoff = {
      _id: 'ho_1',
      team: 'support',
      status: 'open',
      reason: 'Cannot log in',
      requests: [],
      channel: 'whatsapp',
      conversationId: 'whatsapp:+447700900001',
      roleId: 'support',
      customer: { address: 'whatsapp:+447700900001' },
      contact: { whatsapp: 'whatsapp:+447700900001' },
      facts: {},
      lastMessages: [],
      destinations: [],
      createdAt,
      updatedAt: createdAt,
    } satisfies HandoffRecord;
    const notice = buildNotice({ handoff, team: support, transcriptUrl: 'https://a.example.test/t', business: 'Harbour Lane' });
    expect(notice.text).toContain('Out of hours: the customer was told you are back Monday at 09:00 (CEST) and will answer within two hours from then.');
    expect(notice.text).toContain('WhatsApp 24-hour window closes before you open');
    expect(JSON.stringify(notice.webhook.blocks)).toContain('Out of hours');
    // Opened during hours: no such lines.
    const inHours = buildNotice({
      handoff: { ...handoff, createdAt: new Date('2026-03-23T10:00:00Z') },
      team: support,
      transcriptUrl: 'https://a.example.test/t',
      business: 'H',
    });
    expect(inHours.text).not.toContain('Out of hours');
  });
});
