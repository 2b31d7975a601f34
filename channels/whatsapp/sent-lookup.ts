/**
 * Finds out whether a send whose outcome was lost (the worker died between claiming it and
 * recording Twilio's answer) reached Twilio: Twilio has no idempotency key, but its Messages
 * list, filtered by To and From, shows what this sender sent to that number, newest first.
 * A match is an outbound message created after the claim (less a clock-skew margin) whose body
 * matches. Twilio's DateSent filter is not used: it has day granularity and a message still
 * queued has no date_sent yet. Never sends anything.
 */
import type twilio from 'twilio';
import { ChannelSendError, errorStatus, errorText, isRetryableStatus } from '../../src/errors/index.js';
import type { Notice } from '../../src/handoff/notice.js';
import { NoticeSendError } from '../../src/handoff/webhook-sender.js';
import type { SentStatus } from '../../src/contracts/index.js';
import { createTwilioClient } from './twilio-client.js';

/** Newest messages to one number that are searched (a lost send is among the last few). */
const LOOKUP_LIMIT = 50;
/** Twilio's clock and ours may disagree by this much. */
const CLOCK_SKEW_MS = 2 * 60 * 1000;

const sentStatuses = new Set<string>(['queued', 'sent', 'delivered', 'read']);

interface FoundMessage {
  channelMessageId: string;
  status: SentStatus;
}

export type SentLookup = (query: { to: string; since: Date; matches: (body: string) => boolean }) => Promise<FoundMessage[]>;

export function createSentLookup(client: twilio.Twilio, from: string): SentLookup {
  return async ({ to, since, matches }) => {
    let listed: Awaited<ReturnType<typeof client.messages.list>>;
    try {
      listed = await client.messages.list({ to, from, limit: LOOKUP_LIMIT, pageSize: LOOKUP_LIMIT });
    } catch (error) {
      const httpStatus = errorStatus(error);
      throw new ChannelSendError(`could not look up earlier sends at Twilio: ${errorText(error)}`, isRetryableStatus(httpStatus), httpStatus, { cause: error });
    }
    const after = since.getTime() - CLOCK_SKEW_MS;
    return listed
      .filter((message) => message.direction.startsWith('outbound') && message.dateCreated.getTime() >= after && matches(message.body ?? ''))
      .map((message) => ({ channelMessageId: message.sid, status: sentStatuses.has(message.status) ? (message.status as SentStatus) : 'queued' }));
  };
}

/**
 * The hand-off notice's lookup: a notice sent to that team member after the claim that names
 * the same customer and request (stable across rebuilds, unlike its signed transcript link).
 * Returns the message's SID, or undefined when it did not go out; throws NoticeSendError.
 */
export function createWhatsappNoticeLookup(settings: { accountSid: string; authToken: string; from: string; apiBaseUrl?: string | undefined }) {
  const lookup = createSentLookup(createTwilioClient(settings), settings.from);
  return async (to: string, notice: Notice, claimedAt: Date): Promise<string | undefined> => {
    const markers = [notice.templateVariables['1'], notice.templateVariables['2']].filter((marker): marker is string => Boolean(marker));
    try {
      const [found] = await lookup({ to, since: claimedAt, matches: (body) => markers.every((marker) => body.includes(marker)) });
      return found?.channelMessageId;
    } catch (error) {
      throw new NoticeSendError(errorText(error), error instanceof ChannelSendError ? error.retryable : true, { cause: error });
    }
  };
}
