/**
 * Short messages to a team about a takeover — "Ana took this" to the rest of the team, the
 * customer's messages relayed to the holder, "handed back" — each through the send ledger once
 * per destination (`_id` = `<entry>|<destination>`), called under the conversation's lock. A
 * WhatsApp message's SID is remembered as a reference to its hand-off, so a teammate replying
 * to it reaches the right customer. A destination that refuses for good is recorded failed and
 * logged; one that may succeed later fails the call, so the entry is retried (and what was sent
 * is not sent again).
 */
import { Schema, type Connection, type Model } from 'mongoose';
import { errorText, isRetryable } from '../errors/index.js';
import { sendOnce, type LedgerState } from '../ledger/send-ledger.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { HandoffStore } from '../handoff/handoff-store.js';
import type { Destination } from '../handoff/teams.js';
import { NoticeSendError } from '../handoff/webhook-sender.js';

/** How a channel reaches a team member's WhatsApp with free text (the WhatsApp plugin provides it). */
export interface TeamTextSender {
  /** Returns the message's SID; throws NoticeSendError. `mediaUrl`: a file the message carries (an absolute, signed link). */
  send(to: string, text: string, mediaUrl?: string): Promise<string>;
  /** A send claimed at `since` whose outcome was lost: its SID, or undefined when it did not go out. */
  find?(to: string, text: string, since: Date): Promise<string | undefined>;
}

interface TeamMessageRecord {
  _id: string;
  handoffId: string;
  destination: Destination;
  text: string;
  /** The file the message carries (a relayed customer's photo, PDF or voice note). */
  mediaUrl?: string;
  status: 'pending' | 'sending' | 'sent' | 'failed';
  channelMessageId?: string;
  claimedAt?: Date;
  lastError?: string;
  createdAt: Date;
  updatedAt: Date;
}

const teamMessageSchema = new Schema<TeamMessageRecord>(
  {
    _id: { type: String, required: true },
    handoffId: { type: String, required: true },
    destination: { id: String, kind: String, target: String },
    text: { type: String, required: true },
    mediaUrl: String,
    status: { type: String, required: true },
    channelMessageId: String,
    claimedAt: Date,
    lastError: String,
  },
  { timestamps: true, versionKey: false },
);
teamMessageSchema.index({ createdAt: 1 });

const state = (record: TeamMessageRecord): LedgerState => (record.status === 'pending' ? 'pending' : record.status === 'sending' ? 'sending' : 'settled');

export interface TeamMessenger {
  /**
   * Sends `text` to each destination once (key: what this message is, e.g. `<entry id>:taken`),
   * with `mediaUrl` on WhatsApp (a webhook gets the link after the text).
   */
  send(input: { key: string; handoffId: string; destinations: readonly Destination[]; text: string; mediaUrl?: string; logger: Logger }): Promise<void>;
}

export function createTeamMessenger(options: {
  connection: Connection;
  store: Pick<HandoffStore, 'recordRef'>;
  whatsapp: TeamTextSender | undefined;
  webhook(url: string, text: string, idempotencyKey: string): Promise<void>;
  metrics: Metrics;
}): TeamMessenger {
  const records: Model<TeamMessageRecord> =
    (options.connection.models.TeamMessage as Model<TeamMessageRecord> | undefined) ??
    options.connection.model<TeamMessageRecord>('TeamMessage', teamMessageSchema);

  const deliver = async (id: string, handoffId: string, destination: Destination, text: string, mediaUrl: string | undefined) => {
    const entry =
      (await records.findById(id).lean<TeamMessageRecord>().exec()) ??
      (await records
        .findOneAndUpdate(
          { _id: id },
          { $setOnInsert: { handoffId, destination, text, ...(mediaUrl ? { mediaUrl } : {}), status: 'pending' } },
          { upsert: true, returnDocument: 'after' },
        )
        .lean<TeamMessageRecord>()
        .exec());
    if (!entry) throw new Error(`team message ${id} vanished after upsert`);
    const whatsapp = options.whatsapp;
    return sendOnce<TeamMessageRecord, { channelMessageId?: string }>({
      entry,
      id,
      state,
      exclusive: true,
      store: {
        claim: async () =>
          (await records.findOneAndUpdate({ _id: id, status: 'pending' }, { $set: { status: 'sending', claimedAt: new Date() } }).exec()) !== null,
        readBack: async () => (await records.findById(id).lean<TeamMessageRecord>().exec()) ?? undefined,
        reclaim: async () => void (await records.updateOne({ _id: id }, { $set: { status: 'sending', claimedAt: new Date() } }).exec()),
        markSent: async (receipt) => {
          await records
            .updateOne({ _id: id }, { $set: { status: 'sent', ...(receipt.channelMessageId ? { channelMessageId: receipt.channelMessageId } : {}) } })
            .exec();
          if (receipt.channelMessageId) await options.store.recordRef(receipt.channelMessageId, handoffId);
        },
        release: async (error) =>
          void (await records.updateOne({ _id: id, status: 'sending' }, { $set: { status: 'pending', lastError: errorText(error) } }).exec()),
        markFailed: async (error) => void (await records.updateOne({ _id: id }, { $set: { status: 'failed', lastError: errorText(error) } }).exec()),
      },
      channel: {
        send: async () => {
          if (destination.kind === 'webhook') {
            await options.webhook(destination.target, mediaUrl ? `${text}\n${mediaUrl}` : text, id);
            return {};
          }
          if (!whatsapp) throw new NoticeSendError('WhatsApp is off: no message can go to a WhatsApp number', false);
          return { channelMessageId: await (mediaUrl ? whatsapp.send(destination.target, text, mediaUrl) : whatsapp.send(destination.target, text)) };
        },
        ...(destination.kind === 'whatsapp' && whatsapp?.find
          ? {
              lookup: async (stored: TeamMessageRecord) => {
                const found = await whatsapp.find?.(destination.target, text, stored.claimedAt ?? stored.updatedAt);
                return found === undefined ? undefined : { channelMessageId: found };
              },
            }
          : {}),
        afterFailedSend: (error) => (isRetryable(error) ? 'release' : 'fail'),
      },
    });
  };

  return {
    async send({ key, handoffId, destinations, text, mediaUrl, logger }) {
      let retryLater: unknown;
      for (const destination of destinations) {
        const id = `${key}|${destination.id}`;
        try {
          const result = await deliver(id, handoffId, destination, text, mediaUrl);
          if (result.outcome !== 'skipped') options.metrics.increment('team_messages_total', { kind: destination.kind, outcome: 'sent' });
        } catch (error) {
          if (isRetryable(error)) {
            logger.warn('team-message-retrying', { id, error });
            retryLater ??= error;
            continue;
          }
          await records.updateOne({ _id: id }, { $set: { status: 'failed', lastError: errorText(error) } }).exec();
          options.metrics.increment('team_messages_total', { kind: destination.kind, outcome: 'failed' });
          logger.error('team-message-failed', { id, error });
        }
      }
      if (retryLater !== undefined) throw retryLater;
    },
  };
}
