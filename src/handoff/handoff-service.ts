/**
 * Hands a conversation to a team: records the hand-off (or adds to the team's open one),
 * queues its notices, and says in plain words what happens next — who will contact the
 * customer, how and roughly when, plus the team's booking link when one is configured.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { HandoffRequest, HandoffStore } from './handoff-store.js';
import type { NoticeQueue } from './notice-queue.js';
import { closedTeam } from './out-of-hours.js';
import { languageOf } from '../words/language.js';
import { destinationsOf, type Teams } from './teams.js';

export type HandoffRequestInput = Omit<HandoffRequest, 'destinations'> & {
  /** How the channel's own address reaches the customer (e.g. 'here on WhatsApp'), when it does. */
  reachedHere?: string;
  /** The customer's language (an ISO 639-1 code, checked): what a closed team's message is written in. */
  language?: string | undefined;
  /** The service sends a closed team's words itself (`ToolCallContext.sayToCustomer`): the assistant is told so, not asked to say them. */
  serviceSays?: boolean;
};

export interface HandoffOutcome {
  status: 'handed_off' | 'already_open' | 'unavailable';
  team: string;
  /** What the assistant should tell the customer, in substance. */
  nextSteps: string;
  /** The same, addressed to the customer (a closed team's: the service sends it with the reply). */
  customerText: string;
  bookingUrl?: string;
  handoffId?: string;
  /** The team is closed: when it opens (ISO 8601); the texts above say so. */
  opensAt?: string;
}

function howWeReach(contact: HandoffRequest['contact'], reachedHere: string | undefined): string {
  if (reachedHere) return reachedHere;
  if (contact.email) return `by email at ${contact.email}`;
  if (contact.phone) return `by phone at ${contact.phone}`;
  return 'using the contact details given';
}

export function createHandoffService(options: {
  teams: Teams;
  store: HandoffStore;
  notices: NoticeQueue;
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}) {
  return {
    async request({ reachedHere, language, serviceSays, ...input }: HandoffRequestInput): Promise<HandoffOutcome> {
      const team = options.teams[input.team];
      if (!team) {
        options.logger.warn('handoff-team-unconfigured', { team: input.team });
        return {
          status: 'unavailable',
          team: input.team,
          nextSteps: 'No team can take this conversation over right now. Keep helping, and do not promise a call.',
          customerText: '',
        };
      }
      const { handoff, created } = await options.store.open({ ...input, destinations: destinationsOf(team) });
      // Re-adding is a no-op while the jobs exist; it also heals a crash between open and enqueue.
      await options.notices.enqueue(handoff);
      options.metrics.increment('handoffs_total', { team: input.team, outcome: created ? 'opened' : 'added' });
      options.logger.info(created ? 'handoff-opened' : 'handoff-added', { handoffId: handoff._id, team: input.team, channel: input.channel });
      // Team hours (out-of-hours.ts): a closed team's customer is told when it is back.
      const closed = closedTeam({ teamId: input.team, team, at: (options.now ?? Date.now)(), language: languageOf(language), reachedHere, serviceSays });
      if (closed) {
        const { opensAt, ...texts } = closed;
        options.logger.info('handoff-out-of-hours', { handoffId: handoff._id, team: input.team, opensAt: new Date(opensAt).toISOString() });
        return {
          status: created ? 'handed_off' : 'already_open',
          team: team.label,
          handoffId: handoff._id,
          ...texts,
          opensAt: new Date(opensAt).toISOString(),
          ...(team.bookingUrl ? { bookingUrl: team.bookingUrl } : {}),
        };
      }
      const booking = team.bookingUrl ? ` They can also pick a time right away: ${team.bookingUrl}` : '';
      return {
        status: created ? 'handed_off' : 'already_open',
        team: team.label,
        handoffId: handoff._id,
        nextSteps: created
          ? `The ${team.label} will contact the customer ${howWeReach(input.contact, reachedHere)} ${team.responseTime}.${booking}`
          : `The ${team.label} already has this conversation and will contact the customer ${howWeReach(input.contact, reachedHere)} ${team.responseTime}; the new request was added.${booking}`,
        customerText: `The ${team.label} will contact you ${howWeReach(input.contact, reachedHere)} ${team.responseTime}.${
          team.bookingUrl ? ` You can also pick a time: ${team.bookingUrl}` : ''
        }`,
        ...(team.bookingUrl ? { bookingUrl: team.bookingUrl } : {}),
      };
    },
  };
}
export type HandoffService = ReturnType<typeof createHandoffService>;
