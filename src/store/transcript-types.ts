/**
 * What a transcript is made of (statuses, records, ledger keys) and the store's contract
 * (`TranscriptStore`, built by `createTranscriptStore` in `transcript-store.ts`).
 */
import { z } from 'zod';
import type { Model } from 'mongoose';
import type { TranscriptRecord } from './outbox.js';
import type { MediaReference } from '../media/inbound-media.js';
import type { SendOptions } from '../contracts/index.js';

const DELIVERY_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'undelivered'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export type MessageStatus = 'received' | 'pending' | 'sending' | 'uncertain' | DeliveryStatus;

/** Later statuses never regress to earlier ones when Twilio's callbacks arrive out of order. */
export const statusRank: Record<MessageStatus, number> = {
  received: 0,
  pending: 0,
  sending: 1,
  uncertain: 1,
  queued: 2,
  sent: 3,
  delivered: 4,
  read: 5,
  failed: 6,
  undelivered: 6,
};

/** The ledger part number of the apology sent when a message is given up on (replies never split this far). */
export const APOLOGY_PART = 99;
/** The ledger part number of a model outage's holding message (`src/turn/holding-notice.ts`). */
export const HOLDING_PART = 98;

/** How many recent messages a conversation keeps inline for the model's context. */
export const RECENT_MESSAGE_LIMIT = 20;

export const RecentMessageSchema = z.object({
  id: z.string(),
  direction: z.enum(['inbound', 'outbound']),
  text: z.string(),
  /**
   * Kept in the history the customer reads back (the widget's) but never shown to the model: a
   * satisfaction question and its answers (`rating`), a message given up on in an outage, the
   * holding message and the apology (`outage`).
   */
  offModel: z.enum(['rating', 'outage']).optional(),
});

/** One entry of the recent history; `id` is the message's `_id`, so replaying a turn never appends it twice. */
export type RecentMessage = z.infer<typeof RecentMessageSchema>;

export interface ConversationRecord {
  /** The conversation key, e.g. `whatsapp:+14155550100`. */
  _id: string;
  channel: string;
  address: string;
  displayName?: string;
  /** When the record the name came from was made: an older rename arriving late never replaces it. */
  displayNameAt?: Date;
  /** What the website attached (the widget's `setData`): shown to teammates, never given to the model. */
  siteData?: Record<string, string>;
  recent: RecentMessage[];
  createdAt: Date;
  updatedAt: Date;
}

export interface MessageRecord {
  /** The ledger key: `in:<channel>:<message id>` or `out:<channel>:<inbound id>#<part>`. */
  _id: string;
  conversationId: string;
  channel: string;
  direction: 'inbound' | 'outbound';
  text: string;
  channelMessageId?: string;
  replyTo?: string;
  part?: number;
  partCount?: number;
  roleId?: string;
  /** On a reply's first part: the business's guidance entries its prompt quoted, and those the judge found applying. */
  guidance?: { entries: readonly string[]; applied: readonly string[] };
  /** On a reply's first part until its post-turn step runs: what that step needs (JSON, owned by the caller). */
  turn?: string;
  /**
   * On a reply's last part: the answers to tap it is sent with (and until when, in which
   * language), as the turn that stored the reply asked them, so a retry resuming the reply sends
   * the same question. Kept in the reply's ledger beside its parts; never recorded.
   */
  question?: ReplyQuestion;
  status: MessageStatus;
  /** When the part was last claimed for sending: where to look for it if the outcome was lost. */
  claimedAt?: Date;
  /**
   * Only on a part `saveReplyParts` has just stored already claimed for its caller (`claimFirst`):
   * the caller sends it with no claim of its own. Never stored or recorded.
   */
  claimedNow?: true;
  errorCode?: string;
  errorMessage?: string;
  /** An inbound message's media: store ids (GridFS), kinds, a voice note's transcription, why one was not used. */
  media?: MediaReference[];
  createdAt: Date;
  updatedAt: Date;
}

/** A reply's question: what its last part needs to show its answers as buttons. */
export type ReplyQuestion = Pick<SendOptions, 'choices' | 'choicesExpireAt' | 'choicesLanguage'> & { choices: NonNullable<SendOptions['choices']> };

export interface DeliveryRecord {
  /** The channel's message id (Twilio's SID). */
  _id: string;
  messageId: string;
}

/**
 * The transcript records of one turn, appended to the outbox as one entry when the turn ends
 * (`flush`), not one XADD per step. Nothing is lost by waiting: a turn that ends without
 * flushing has not acknowledged its batch, so its retry records everything again — the
 * resumed reply parts from the ledger as it stands (`partRecords`), statuses and delivery ids
 * included — and every record is idempotent by `_id`.
 */
export interface TurnRecords {
  add(records: readonly TranscriptRecord[]): void;
  /** Appends what was added since the last flush as one outbox entry (nothing when empty). */
  flush(): Promise<void>;
}

export interface OpenedConversation {
  conversationId: string;
  created: boolean;
  recent: RecentMessage[];
}

export interface TranscriptStore {
  readonly conversations: Model<ConversationRecord>;
  readonly messages: Model<MessageRecord>;
  ensureIndexes(): Promise<void>;
  /** A turn's records, appended as one outbox entry by `flush` (see `TurnRecords`). */
  turnRecords(): TurnRecords;
  /**
   * Finds or creates the conversation; returns its recent history, oldest first. With a turn's
   * `records`, its record goes there every time (a retry must not depend on the attempt that
   * created it having flushed); without, to the outbox when it was created or renamed.
   */
  openConversation(input: { key: string; channel: string; address: string; displayName?: string }, records?: TurnRecords): Promise<OpenedConversation>;
  /**
   * The conversation hash's fields (a feature keeps its own there, `<feature>:<field>`) and whether
   * the conversation is in Redis. An open of it in flight in this process is joined — its one read,
   * settled once the conversation is there (`exists`) — so a step running beside the turn's open
   * (the takeover hook) reads it for no command; otherwise one HGETALL.
   */
  conversationFields(conversationId: string): Promise<{ exists: boolean; fields: Readonly<Record<string, string>> }>;
  /** Stores an inbound message once, however often it is recorded (with `records`: when the turn flushes). */
  recordInbound(
    input: {
      conversationId: string;
      channel: string;
      channelMessageId: string;
      text: string;
      receivedAt: Date;
      media?: MediaReference[];
    },
    records?: TurnRecords,
  ): Promise<void>;
  /** The conversation's recent history, oldest first (empty when unknown). */
  recent(conversationId: string): Promise<RecentMessage[]>;
  /**
   * Replaces the conversation's inline recent history (caller holds the conversation's lock);
   * `customerAt` stamps when the customer last wrote (WhatsApp's 24-hour window) in the same write,
   * as does `historyAt` (now) every history write, `appendRecent`'s too.
   */
  saveRecent(conversationId: string, recent: readonly RecentMessage[], customerAt?: number): Promise<void>;
  /**
   * Appends to the conversation's recent history in one script (entries it holds already are
   * skipped; the oldest go past RECENT_MESSAGE_LIMIT): for words the service says outside a
   * turn. Nothing when the conversation is not in Redis. `customerAt` as in `saveRecent`.
   */
  appendRecent(conversationId: string, entries: readonly RecentMessage[], customerAt?: number): Promise<void>;
  /** Reply parts an earlier attempt stored for an inbound message (a checkpoint), in order. */
  replyParts(channel: string, replyTo: string): Promise<MessageRecord[]>;
  /**
   * Stores a reply's parts unless an earlier attempt stored them; returns the stored parts. Their
   * records (`partRecords`, as stored) go to `records`, or to the outbox at once.
   */
  saveReplyParts(
    input: {
      conversationId: string;
      channel: string;
      replyTo: string;
      roleId: string;
      parts: readonly string[];
      /** Kept with the parts for whichever attempt delivers the reply (see `takeTurn`); returned on the first. */
      turn?: string;
      /** Recorded on the first part: the guidance entries the turn's prompt quoted and those that applied. */
      guidance?: MessageRecord['guidance'];
      /** The answers to tap sent with the last part, kept in the same write for a retry resuming the reply. */
      question?: ReplyQuestion;
      /**
       * The caller sends the first part at once: when this attempt stores the parts, the first is
       * stored claimed (`sending`, `claimedNow`), one write instead of a store and a claim.
       */
      claimFirst?: boolean;
    },
    records?: TurnRecords,
  ): Promise<MessageRecord[]>;
  /** Takes (once) the `turn` of the reply a part (any of its parts) belongs to; undefined when none or already taken. */
  takeTurn(messageId: string): Promise<string | undefined>;
  /**
   * Takes (once) the `turn` of a reply whose parts this attempt stored (its first part as
   * `saveReplyParts` returned it carries the payload, so nothing is read back): true when it was
   * still there.
   */
  dropTurn(messageId: string): Promise<boolean>;
  /** Claims a pending part for sending; false when another attempt already claimed or sent it. */
  claimPart(messageId: string): Promise<boolean>;
  /** One stored message by its ledger key. */
  message(messageId: string): Promise<MessageRecord | undefined>;
  /** Claims again a part whose earlier send outcome was lost (it was not found sent). */
  reclaimPart(messageId: string): Promise<void>;
  /**
   * The delivery ids (Twilio's SIDs) the parts of these messages' replies were recorded sent as,
   * each to its part's ledger key: which sends are another part's when a lost one is looked up.
   */
  deliveryOwners(messageIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /**
   * Stores the apology for a message given up on (or, with `part`, another one-off notice of its
   * reply: the holding message of a model outage), once; returns the stored ledger entry.
   */
  saveApology(input: { conversationId: string; channel: string; replyTo: string; text: string; part?: number }): Promise<MessageRecord>;
  /** Records an inbound message as given up on (storing it if an outage kept it from being recorded). */
  markInboundFailed(input: {
    conversationId: string;
    channel: string;
    channelMessageId: string;
    text: string;
    receivedAt: Date;
    errorMessage: string;
  }): Promise<void>;
  /**
   * With `records`, its status and delivery id are recorded when the turn flushes (the ledger entry
   * first). With `takeTurn` (the reply's last part, whose parts this attempt stored) the reply's
   * `turn`, held in that part's entry, is taken in the same write: true when it was still there.
   */
  markPartSent(messageId: string, channelMessageId: string, status: DeliveryStatus, records?: TurnRecords, takeTurn?: boolean): Promise<boolean>;
  /** Returns a claimed part to pending so a retry can send it (the channel refused it transiently). */
  releasePart(messageId: string): Promise<void>;
  markPartFailed(messageId: string, status: 'failed' | 'uncertain', errorCode: string | undefined, errorMessage: string, records?: TurnRecords): Promise<void>;
  /**
   * Applies a delivery status callback to the part it names (`messageId`, from the callback's URL)
   * or, naming none (sent before callbacks named their part), to the part its delivery id was
   * recorded for; returns false when there is no such part, or it was sent as another delivery id.
   */
  updateDeliveryStatus(input: {
    channelMessageId: string;
    messageId?: string;
    status: DeliveryStatus;
    errorCode?: string;
    errorMessage?: string;
  }): Promise<boolean>;
  /** A whole conversation in order (not a hot path: on FerretDB this scans). */
  conversationMessages(conversationId: string): Promise<MessageRecord[]>;
  /** Deletes messages, delivery ids and quiet conversations older than `cutoff`; returns counts. */
  purgeOlderThan(cutoff: Date): Promise<{ messages: number; conversations: number }>;
}

export function inboundMessageId(channel: string, channelMessageId: string): string {
  return `in:${channel}:${channelMessageId}`;
}

export function outboundMessageId(channel: string, replyTo: string, part: number): string {
  return `out:${channel}:${replyTo}#${part}`;
}
