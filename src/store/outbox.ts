/**
 * The transcript outbox: a Redis Stream of transcript records (inbound messages, reply parts,
 * status changes, delivery ids, conversations) the hot path appends to instead of waiting on
 * MongoDB. The transcript writer reads it through a consumer group and deletes an entry only
 * after MongoDB acknowledged its records, so a record is written at least once and survives a
 * crash of either side (Redis persists it with AOF). Every record is an idempotent write by
 * `_id`, so writing one twice changes nothing. Each process watches the backlog (XLEN once a
 * second, not per message): it is the `transcript_outbox_backlog` gauge, and at
 * TRANSCRIPT_OUTBOX_MAX new inbound messages are refused (503) until the writer catches up.
 *
 * Nothing is deleted unwritten: a record this version cannot read (a newer version's record
 * kind or status) and a record MongoDB refuses go to the dead-letter stream (`deadLetter`,
 * `transcript_dead_letter_total{reason}`) with their entry's id, in the outbox's own format (an
 * entry's `r` field can be added back to the outbox as it is); that stream keeps the newest
 * ~DEAD_LETTER_MAX_ENTRIES. Fields this version does not know
 * are kept and written (a rolling deploy that adds one loses nothing). Each writer is a consumer
 * of the group: it leaves the group on a clean shutdown, and writers remove consumers idle for
 * CONSUMER_IDLE_MS with nothing pending (a killed process's, once its entries were taken over).
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { MediaReferenceSchema } from '../media/content-check.js';
import { luaScript, type RedisClient } from '../redis.js';
import { AppError, errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { TRANSCRIPT_WRITER_GROUP, transcriptKeys } from './transcript-keys.js';

const MessageStatusSchema = z.enum(['received', 'pending', 'sending', 'uncertain', 'queued', 'sent', 'delivered', 'read', 'failed', 'undelivered']);
const Iso = z.iso.datetime();

/**
 * A message as the outbox carries it (dates as ISO text); the `turn` payload never leaves Redis.
 * Loose objects: a field a newer version added is kept and written, never stripped.
 */
export const OutboxMessageSchema = z.looseObject({
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
  media: z.array(MediaReferenceSchema).optional(),
  createdAt: Iso,
  updatedAt: Iso,
});

export const TranscriptRecordSchema = z.discriminatedUnion('kind', [
  z.looseObject({
    kind: z.literal('conversation'),
    _id: z.string(),
    channel: z.string(),
    address: z.string(),
    displayName: z.string().optional(),
    /**
     * Set when this record's name is new in Redis (the conversation was created or renamed): the
     * writer then writes it whatever it remembers writing, since another writer may have written
     * another name in between. Without it (the same name Redis already held) a writer may skip it.
     */
    nameChanged: z.literal(true).optional(),
    at: Iso,
  }),
  z.object({ kind: z.literal('message'), message: OutboxMessageSchema }),
  z.looseObject({
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

/**
 * The dead-letter stream keeps about this many entries (`XADD MAXLEN ~`: Redis trims whole stream
 * nodes, so a few more): past it the oldest are trimmed, so records refused without end (a bug
 * writing bad ones) cannot fill the Redis that holds the hot path. Alerting on
 * `transcript_dead_letter_total` and the error log finds them long before.
 */
const DEAD_LETTER_MAX_ENTRIES = 10_000;

/** Records set aside instead of written: kept in the dead-letter stream (the newest DEAD_LETTER_MAX_ENTRIES). */
export interface DeadLetter {
  /** The outbox entry they came in. */
  entryId: string;
  /** `unreadable`: this version cannot parse them; `rejected`: MongoDB refused to store them. */
  reason: 'unreadable' | 'rejected';
  error: string;
  /** The records as the outbox held them (what `r` holds in the dead-letter entry). */
  records?: unknown[];
  /** An entry that is not a JSON array of records: its fields as they were. */
  raw?: string[];
}

export interface OutboxEntry {
  id: string;
  /** The records this version reads, in order. */
  records: TranscriptRecord[];
  /** What it could not read (the entry's other records are still written). */
  unreadable?: DeadLetter;
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
/**
 * A consumer with nothing pending that has not read for this long is removed from the group (a
 * process that ended without leaving). Removing a live one costs nothing: its next read adds it
 * back. One with pending entries is kept until another writer takes them over (CLAIM_IDLE_MS).
 */
const CONSUMER_IDLE_MS = 10 * 60_000;
/** How often a writer looks for such consumers. */
const REAP_EVERY_MS = 60_000;

/**
 * Removes the group's consumers (but ARGV[2]) idle for ARGV[3] ms or more with nothing pending;
 * ARGV[3] = -1: only consumer ARGV[2], if it has nothing pending. The pending count is read and
 * the consumer removed in one script, so no entry delivered in between is left in no one's list.
 * One key, the outbox's (nothing else is ever in a script with it).
 */
const removeConsumersScript = luaScript(`
local removed = 0
if tonumber(ARGV[3]) < 0 then
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
  if #pending == 0 then removed = redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2]) == 0 and 1 or 0 end
  return removed
end
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
  if fields['name'] ~= ARGV[2] and tonumber(fields['pending']) == 0 and tonumber(fields['idle']) >= tonumber(ARGV[3]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    removed = removed + 1
  end
end
return removed
`);

export interface TranscriptOutbox {
  /** Appends records as one entry (one XADD). */
  append(records: readonly TranscriptRecord[]): Promise<void>;
  /** Creates the consumer group (from the stream's start) unless it exists. */
  ensureGroup(): Promise<void>;
  /** Up to `count` entries for this consumer: a dead consumer's first, then new ones (blocking up to `blockMs`). */
  read(count: number, blockMs: number): Promise<OutboxEntry[]>;
  /** Ends a blocking read now, as if its time had run out (CLIENT UNBLOCK; on a cluster the read runs its time). */
  interrupt(): Promise<void>;
  /** Acknowledges and deletes entries MongoDB has acknowledged. */
  remove(ids: readonly string[]): Promise<void>;
  /** Entries not yet written to MongoDB (XLEN). */
  backlog(): Promise<number>;
  /** Starts polling the backlog for the gauge and the bound; returns a stop function. */
  watch(): () => void;
  /** Throws `TranscriptOutboxFullError` when the last polled backlog is at the bound. */
  assertRoom(): void;
  /** Keeps records in the dead-letter stream (one capped XADD each), logged and counted (`transcript_dead_letter_total{reason}`). */
  deadLetter(letters: readonly DeadLetter[]): Promise<void>;
  /** Removes this reader's consumer from the group unless entries are pending for it (clean shutdown). */
  leave(): Promise<void>;
  /** Removes other consumers idle for `minIdleMs` with nothing pending; how many. Reads do it every REAP_EVERY_MS. */
  removeIdleConsumers(minIdleMs?: number): Promise<number>;
}

/**
 * An entry's records, each read on its own: one this version cannot read (a newer version's
 * kind or status) is set aside for the dead-letter stream and the others are written. Never
 * retried forever, never deleted.
 */
function decode(id: string, fields: string[]): OutboxEntry {
  const at = fields.findIndex((field, index) => index % 2 === 0 && field === 'r');
  const raw = at >= 0 ? fields[at + 1] : undefined;
  let items: unknown;
  try {
    items = JSON.parse(raw ?? '');
  } catch {
    items = undefined;
  }
  if (!Array.isArray(items)) return { id, records: [], unreadable: { entryId: id, reason: 'unreadable', error: 'not a JSON array of records', raw: fields } };
  const records: TranscriptRecord[] = [];
  const unread: unknown[] = [];
  const issues: string[] = [];
  for (const item of items) {
    const parsed = TranscriptRecordSchema.safeParse(item);
    if (parsed.success) records.push(parsed.data);
    else {
      unread.push(item);
      issues.push(...parsed.error.issues.slice(0, 2).map((issue) => `${issue.path.join('.') || '(record)'}: ${issue.message}`));
    }
  }
  return {
    id,
    records,
    ...(unread.length > 0 ? { unreadable: { entryId: id, reason: 'unreadable', error: issues.slice(0, 4).join('; '), records: unread } } : {}),
  };
}

/** Keeps records in the dead-letter stream (see `TranscriptOutbox.deadLetter`). */
async function writeDeadLetters(
  target: { redis: RedisClient; key: string; maxLen: number; logger: Logger; metrics: Metrics },
  letters: readonly DeadLetter[],
): Promise<void> {
  const { redis, logger, metrics } = target;
  for (const letter of letters) {
    const fields = [
      'entry',
      letter.entryId,
      'reason',
      letter.reason,
      'error',
      letter.error.slice(0, 2000),
      ...(letter.records ? ['r', JSON.stringify(letter.records)] : []),
      ...(letter.raw ? ['raw', JSON.stringify(letter.raw)] : []),
    ];
    // Capped: a flood of refused records (a bug writing bad ones) must not fill Redis, which holds the hot path.
    const deadId = await redis.xadd(target.key, 'MAXLEN', '~', target.maxLen, '*', ...fields);
    const count = letter.records?.length ?? 1;
    metrics.increment('transcript_dead_letter_total', { reason: letter.reason }, count);
    logger.error('transcript-records-dead-lettered', {
      entryId: letter.entryId,
      deadLetterId: deadId,
      reason: letter.reason,
      records: count,
      error: letter.error,
    });
  }
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
  /** The dead-letter stream's cap (default DEAD_LETTER_MAX_ENTRIES); tests set a small one. */
  deadLetterMaxLen?: number;
}): TranscriptOutbox {
  const { redis, logger, metrics, maxBacklog } = options;
  const reader = options.reader ?? redis;
  const key = transcriptKeys.outbox(options.database);
  const deadKey = transcriptKeys.deadLetters(options.database);
  const deadLetterMaxLen = options.deadLetterMaxLen ?? DEAD_LETTER_MAX_ENTRIES;
  const consumer = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let lastBacklog = 0;
  let nextClaimAt = 0;
  let nextReapAt = Date.now() + REAP_EVERY_MS;
  /** The blocking connection's client id while it stays connected (for CLIENT UNBLOCK); a cluster's reads are not interrupted. */
  let readerId: number | undefined;
  let interruptible = reader !== redis && reader instanceof Redis;
  if (interruptible) reader.on('close', () => (readerId = undefined));

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
      if (Date.now() >= nextReapAt) {
        nextReapAt = Date.now() + REAP_EVERY_MS;
        await outbox.removeIdleConsumers().catch((error: unknown) => logger.warn('transcript-outbox-reap-failed', { error }));
      }
      if (Date.now() >= nextClaimAt) {
        nextClaimAt = Date.now() + CLAIM_EVERY_MS;
        const taken = await claimIdle(count);
        if (taken.length > 0) return taken;
      }
      // A server that refuses CLIENT (an ACL) only costs the interruption: the read runs its time.
      if (interruptible && readerId === undefined) readerId = await reader.client('ID').then(Number, () => void (interruptible = false));
      const reply = (await reader.xreadgroup('GROUP', TRANSCRIPT_WRITER_GROUP, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, '>')) as StreamReply;
      return (reply?.[0]?.[1] ?? []).map(([id, fields]) => decode(id, fields));
    },

    async interrupt() {
      if (readerId !== undefined) await redis.client('UNBLOCK', readerId);
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

    async deadLetter(letters) {
      await writeDeadLetters({ redis, key: deadKey, maxLen: deadLetterMaxLen, logger, metrics }, letters);
    },

    async leave() {
      const removed = Number(await removeConsumersScript(redis, [key], [TRANSCRIPT_WRITER_GROUP, consumer, -1]));
      logger.info(removed === 1 ? 'transcript-outbox-consumer-left' : 'transcript-outbox-consumer-kept', { consumer });
    },

    async removeIdleConsumers(minIdleMs = CONSUMER_IDLE_MS) {
      const removed = Number(await removeConsumersScript(redis, [key], [TRANSCRIPT_WRITER_GROUP, consumer, Math.max(0, minIdleMs)]));
      if (removed > 0) logger.info('transcript-outbox-consumers-removed', { removed });
      return removed;
    },

    assertRoom() {
      if (lastBacklog >= maxBacklog) {
        throw new TranscriptOutboxFullError(`the transcript outbox holds ${lastBacklog} entries (TRANSCRIPT_OUTBOX_MAX ${maxBacklog}): MongoDB is behind`);
      }
    },
  };
  return outbox;
}
