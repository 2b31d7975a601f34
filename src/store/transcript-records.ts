/**
 * What the transcript store's parts share: a reply part's ledger entry as Redis holds it and its
 * transcript records, and where records go (a turn's, flushed as one outbox entry, or the outbox).
 */
import { z } from 'zod';
import type { RedisClient } from '../redis.js';
import { OutboxMessageSchema, type TranscriptOutbox, type TranscriptRecord } from './outbox.js';
import { transcriptKeys } from './transcript-keys.js';
import { statusRank, type MessageRecord, type MessageStatus, type ReplyQuestion, type TurnRecords } from './transcript-types.js';

/** Now, as records and ledger entries stamp it. */
export const now = () => new Date().toISOString();

/** The ledger key's parts: which reply hash and field hold it (undefined: not a reply part). */
export function ledgerSlot(messageId: string): { key: string; field: string } | undefined {
  const match = /^out:([^:]+):(.+)#(\d+)$/.exec(messageId);
  if (!match) return undefined;
  const [, channel = '', replyTo = '', part = ''] = match;
  return { key: transcriptKeys.reply(channel, replyTo), field: part };
}

/**
 * A reply part as Redis holds it: the record with ISO dates (a reply's last part may hold its
 * `turn` payload, never part of the record; an earlier version kept it in a field of its own).
 */
const StoredPartSchema = OutboxMessageSchema.extend({ claimedAt: z.iso.datetime().optional(), errorCode: z.string().optional() });
export type StoredPart = z.infer<typeof StoredPartSchema>;

export function fromStored(part: StoredPart): MessageRecord {
  const { createdAt, updatedAt, claimedAt, ...rest } = part;
  return { ...rest, createdAt: new Date(createdAt), updatedAt: new Date(updatedAt), ...(claimedAt ? { claimedAt: new Date(claimedAt) } : {}) };
}

export function toRecord(raw: string): MessageRecord {
  const { turn: _turn, ...stored } = StoredPartSchema.parse(JSON.parse(raw));
  return fromStored(stored);
}

/** A reply's question as its ledger holds it (the `question` field beside its parts). */
const StoredQuestionSchema = z.object({
  choices: z.array(z.object({ id: z.string(), label: z.string() })).min(1),
  choicesExpireAt: z.number().optional(),
  choicesLanguage: z.string().optional(),
});

/** A reply's question as the ledger stores it: the answers and their extras only. */
export function storedQuestion({ choices, choicesExpireAt, choicesLanguage }: ReplyQuestion): string {
  return JSON.stringify({
    choices: choices.map(({ id, label }) => ({ id, label })),
    ...(choicesExpireAt !== undefined ? { choicesExpireAt } : {}),
    ...(choicesLanguage !== undefined ? { choicesLanguage } : {}),
  });
}

/** The stored question read back; undefined when absent or unreadable (the part's text lists its answers anyway). */
export function toQuestion(raw: string | undefined): ReplyQuestion | undefined {
  if (raw === undefined) return undefined;
  try {
    const parsed = StoredQuestionSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function toOutbox(part: MessageRecord): TranscriptRecord {
  const { claimedAt: _claimedAt, claimedNow: _claimedNow, errorCode: _errorCode, turn: _turn, question: _question, createdAt, updatedAt, ...rest } = part;
  return { kind: 'message', message: { ...rest, createdAt: createdAt.toISOString(), updatedAt: updatedAt.toISOString() } };
}

/**
 * A reply part's transcript records as its ledger entry stands: the message, and once it moved
 * on from `pending` its status (and delivery id), so a retry resuming parts an earlier attempt
 * sent records what that attempt may not have flushed.
 */
export function partRecords(part: MessageRecord): TranscriptRecord[] {
  const records: TranscriptRecord[] = [toOutbox(part)];
  if (part.status === 'pending') return records;
  const at = part.updatedAt.toISOString();
  records.push({
    kind: 'status',
    _id: part._id,
    status: part.status,
    ...(part.channelMessageId ? { channelMessageId: part.channelMessageId } : {}),
    ...(part.errorCode ? { errorCode: part.errorCode } : {}),
    ...(part.errorMessage ? { errorMessage: part.errorMessage } : {}),
    at,
  });
  if (part.channelMessageId) records.push({ kind: 'delivery', _id: part.channelMessageId, messageId: part._id, at });
  return records;
}

/** Statuses a part may move to `status` from: lower-ranked ones (a status never regresses). */
export function outranked(status: MessageStatus): string {
  return `,${(Object.keys(statusRank) as MessageStatus[]).filter((from) => statusRank[from] < statusRank[status]).join(',')},`;
}

/** The hot copy and the outbox, shared by the store's parts. */
export interface TranscriptContext {
  redis: RedisClient;
  outbox: TranscriptOutbox;
  /** To the turn's records when given, else one outbox entry now. */
  record(records: TurnRecords | undefined, added: readonly TranscriptRecord[]): Promise<void>;
}

export function transcriptContext(redis: RedisClient, outbox: TranscriptOutbox): TranscriptContext {
  return {
    redis,
    outbox,
    async record(records, added) {
      if (records) records.add(added);
      else await outbox.append(added);
    },
  };
}

/** A turn's records, appended as one outbox entry by `flush` (see `TurnRecords`). */
export function createTurnRecords(outbox: TranscriptOutbox): TurnRecords {
  let gathered: TranscriptRecord[] = [];
  return {
    add(added) {
      gathered.push(...added);
    },
    async flush() {
      if (gathered.length === 0) return;
      const flushing = gathered;
      gathered = [];
      try {
        await outbox.append(flushing);
      } catch (error) {
        gathered = [...flushing, ...gathered];
        throw error;
      }
    },
  };
}
