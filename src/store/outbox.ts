/**
 * The transcript outbox: a Redis Stream of transcript records (inbound messages, reply parts,
 * status changes, delivery ids, conversations) the hot path appends to instead of waiting on
 * MongoDB. The transcript writer reads it through a consumer group and deletes an entry only
 * after MongoDB acknowledged its records, so a record is written at least once and survives a
 * crash of either side (Redis persists it with AOF). Every record is an idempotent write by
 * `_id`, so writing one twice changes nothing. Each process watches the backlog (XLEN once a
 * second, not per message): it is the `transcript_outbox_backlog` gauge, and at
 * TRANSCRIPT_OUTBOX_MAX new inbound messages are refused (503) until the writer catches up.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis.js';
import { z } from 'zod';
import { MEDIA_FAILURES, MEDIA_KINDS } from '../media/content-check.js';
import { AppError, errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { TRANSCRIPT_WRITER_GROUP, transcriptKeys } from './transcript-keys.js';

const MessageStatusSchema = z.enum(['received', 'pending', 'sending', 'uncertain', 'queued', 'sent', 'delivered', 'read', 'failed', 'undelivered']);
const Iso = z.iso.datetime();

/** A message as the outbox carries it (dates as ISO text); the `turn` payload never leaves Redis. */
export const OutboxMessageSchema = z.object({
  _id: z.string(),
  conversationId: z.string(),
  channel: z.string(),
  direction: z.enum(['inbound', 'outbound']),
  text: z.string(),
  channelMessageId: z.string().optional(),
  replyTo: z.string().optional(),
  part: z.number().optional(),
  partCount: z.number().optional(),
  roleId: z.string().optional(),
  status: MessageStatusSchema,
  errorMessage: z.string().optional(),
  /** An inbound message's media references (store ids, kinds, a transcription, why one was not used). */
  media: z
    .array(
      z.object({
        id: z.string().optional(),
        contentType: z.string(),
        kind: z.enum(MEDIA_KINDS).optional(),
        size: z.number().optional(),
        filename: z.string().optional(),
        transcription: z.string().optional(),
        error: z.enum(MEDIA_FAILURES).optional(),
      }),
    )
    .optional(),
  createdAt: Iso,
  updatedAt: Iso,
});

export const TranscriptRecordSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('conversation'), _id: z.string(), channel: z.string(), address: z.string(), displayName: z.string().optional(), at: Iso }),
  z.object({ kind: z.literal('message'), message: OutboxMessageSchema }),
  z.object({
    kind: z.literal('status'),
    _id: z.string(),
    status: MessageStatusSchema,
    channelMessageId: z.string().optional(),
    errorCode: z.string().optional(),
    errorMessage: z.string().optional(),
    at: Iso,
  }),
  z.object({ kind: z.literal('delivery'), _id: z.string(), messageId: z.string(), at: Iso }),
  // Confirmed actions (src/actions/): the action's whole record at each step, written by `_id`.
  z.object({ kind: z.literal('action'), action: z.looseObject({ _id: z.string(), updatedAt: Iso }) }),
]);
export type TranscriptRecord = z.infer<typeof TranscriptRecordSchema>;

const EntrySchema = z.array(TranscriptRecordSchema);

export interface OutboxEntry {
  id: string;
  records: TranscriptRecord[];
}

/** New inbound messages are refused while the outbox holds TRANSCRIPT_OUTBOX_MAX entries. */
class TranscriptOutboxFullError extends AppError {}

/**
 * Entries a writer read but did not acknowledge for this long are taken over (a killed worker's
 * batch). A live writer still retrying them loses nothing: every write is idempotent by `_id`.
 */
const CLAIM_IDLE_MS = 10_000;
/** How often a writer looks for such entries (XAUTOCLAIM), rather than on every read. */
const CLAIM_EVERY_MS = 5_000;
const BACKLOG_POLL_MS = 1_000;

export interface TranscriptOutbox {
  /** Appends records as one entry (one XADD). */
  append(records: readonly TranscriptRecord[]): Promise<void>;
  /** Creates the consumer group (from the stream's start) unless it exists. */
  ensureGroup(): Promise<void>;
  /** Up to `count` entries for this consumer: a dead consumer's first, then new ones (blocking up to `blockMs`). */
  read(count: number, blockMs: number): Promise<OutboxEntry[]>;
  /** Acknowledges and deletes entries MongoDB has acknowledged. */
  remove(ids: readonly string[]): Promise<void>;
  /** Entries not yet written to MongoDB (XLEN). */
  backlog(): Promise<number>;
  /** Starts polling the backlog for the gauge and the bound; returns a stop function. */
  watch(): () => void;
  /** Throws `TranscriptOutboxFullError` when the last polled backlog is at the bound. */
  assertRoom(): void;
}

type StreamReply = [string, [string, string[]][]][] | null;

export function createTranscriptOutbox(options: {
  redis: RedisClient;
  /** A connection of its own for the blocking read (the writer's); defaults to `redis`. */
  reader?: RedisClient;
  maxBacklog: number;
  /** The MongoDB database the records are for: deployments (and test suites) sharing a Redis keep apart. */
  database: string;
  logger: Logger;
  metrics: Metrics;
}): TranscriptOutbox {
  const { redis, logger, metrics, maxBacklog } = options;
  const reader = options.reader ?? redis;
  const key = transcriptKeys.outbox(options.database);
  const consumer = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let lastBacklog = 0;
  let nextClaimAt = 0;

  const decode = (id: string, fields: string[]): OutboxEntry => {
    const raw = fields[fields.indexOf('r') + 1];
    try {
      const parsed = EntrySchema.safeParse(JSON.parse(raw ?? ''));
      if (parsed.success) return { id, records: parsed.data };
      logger.error('transcript-outbox-entry-unreadable', { id, issues: parsed.error.issues.slice(0, 3) });
    } catch (error) {
      logger.error('transcript-outbox-entry-unreadable', { id, error });
    }
    // An unreadable entry is set aside (acknowledged with the batch), never retried forever.
    return { id, records: [] };
  };

  /** Entries another writer read and left unacknowledged for CLAIM_IDLE_MS (it died): taken over. */
  const claimIdle = async (count: number): Promise<OutboxEntry[]> => {
    const claimed = (await redis.xautoclaim(key, TRANSCRIPT_WRITER_GROUP, consumer, CLAIM_IDLE_MS, '0-0', 'COUNT', count)) as [
      string,
      [string, string[] | null][],
      ...unknown[],
    ];
    return claimed[1].filter((entry): entry is [string, string[]] => entry[1] !== null).map(([id, fields]) => decode(id, fields));
  };

  const outbox: TranscriptOutbox = {
    async append(records) {
      if (records.length === 0) return;
      await redis.xadd(key, '*', 'r', JSON.stringify(records));
    },

    async ensureGroup() {
      try {
        await redis.xgroup('CREATE', key, TRANSCRIPT_WRITER_GROUP, '0', 'MKSTREAM');
      } catch (error) {
        if (!errorText(error).includes('BUSYGROUP')) throw error;
      }
    },

    async read(count, blockMs) {
      if (Date.now() >= nextClaimAt) {
        nextClaimAt = Date.now() + CLAIM_EVERY_MS;
        const taken = await claimIdle(count);
        if (taken.length > 0) return taken;
      }
      const reply = (await reader.xreadgroup('GROUP', TRANSCRIPT_WRITER_GROUP, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, '>')) as StreamReply;
      return (reply?.[0]?.[1] ?? []).map(([id, fields]) => decode(id, fields));
    },

    async remove(ids) {
      if (ids.length === 0) return;
      // Two commands in one round trip, no MULTI: deleted first, so a failed acknowledgement
      // leaves only a pending id without an entry (XAUTOCLAIM drops it), never an entry that no
      // reader will deliver again; a failure of either is thrown and the batch retried (idempotent).
      const results = await redis
        .pipeline()
        .xdel(key, ...ids)
        .xack(key, TRANSCRIPT_WRITER_GROUP, ...ids)
        .exec();
      for (const [error] of results ?? []) if (error) throw error;
    },

    async backlog() {
      return redis.xlen(key);
    },

    watch() {
      const poll = async () => {
        try {
          lastBacklog = await outbox.backlog();
          metrics.setGauge('transcript_outbox_backlog', lastBacklog);
          if (lastBacklog >= maxBacklog) logger.error('transcript-outbox-full', { backlog: lastBacklog, max: maxBacklog });
        } catch (error) {
          logger.warn('transcript-outbox-poll-failed', { error });
        }
      };
      void poll();
      const timer = setInterval(() => void poll(), BACKLOG_POLL_MS);
      timer.unref();
      return () => clearInterval(timer);
    },

    assertRoom() {
      if (lastBacklog >= maxBacklog) {
        throw new TranscriptOutboxFullError(`the transcript outbox holds ${lastBacklog} entries (TRANSCRIPT_OUTBOX_MAX ${maxBacklog}): MongoDB is behind`);
      }
    },
  };
  return outbox;
}
