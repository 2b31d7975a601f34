/**
 * Messages between their conversation's inbox and a turn job. The web appends a message to the
 * inbox, then adds the job that answers it: a web process killed between the two (or whose add
 * failed and whose background retries died with it) would leave the message waiting with no
 * job, unanswered until the customer wrote again. So every message is noted here as it is
 * appended (the note is sent ahead of the inbox write, on the same connection: Redis has it
 * first) and crossed off once a job exists for it or it needs none. A worker's sweeper adds a
 * job for every note older than `staleMs` and crosses it off: such a message was stranded.
 *
 * A job is harmless where none was needed (it drains an empty inbox, or finds the lock held), so
 * a note crossed off late costs one job cycle at most. Notes are spread over SHARDS sorted sets,
 * each its own hash tag (no one cluster slot takes every message), scored by when they were noted.
 * The web crosses notes off together (`clearSoon`): a shard's cross-offs wait up to
 * CROSS_OFF_DELAY_MS, far below `staleMs`, and go as one ZREM (flushed on close; a process that
 * dies first leaves them to the sweeper, a harmless job each).
 */
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import { redisKeys } from './keys.js';
import { enqueueTurn, type TurnQueue } from './turn-queue.js';

const SHARDS = 16;
/** The most stale notes one sweep takes from a shard (the rest wait for the next sweep). */
const SWEEP_BATCH = 100;
/** How long a cross-off waits for the others of its shard (one ZREM for them all, not one each). */
const CROSS_OFF_DELAY_MS = 1_000;

const NoteSchema = z.tuple([z.string().min(1), z.string().min(1)]);

export interface IntakeNote {
  conversationKey: string;
  messageId: string;
}

export interface IntakeLedger {
  /** Notes a message about to be appended; call it before the inbox write, without awaiting in between. */
  note(message: IntakeNote, now?: number): Promise<void>;
  /** Crosses a message off: a job exists for it, or it needs none. */
  clear(message: IntakeNote): Promise<void>;
  /** Crosses it off within CROSS_OFF_DELAY_MS, with the other cross-offs of its shard (best effort: a note left costs one job). */
  clearSoon(message: IntakeNote): void;
  /** Sends the cross-offs waiting now (on close). */
  flush(): Promise<void>;
  /** Notes taken before `before` (epoch ms), up to SWEEP_BATCH per shard. */
  stale(before: number): Promise<IntakeNote[]>;
}

/** FNV-1a over the conversation key: its shard. */
function shardOf(conversationKey: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < conversationKey.length; index += 1) hash = Math.imul(hash ^ conversationKey.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % SHARDS;
}

const member = ({ conversationKey, messageId }: IntakeNote) => JSON.stringify([conversationKey, messageId]);

/** `queuePrefix`: the turns queue's BullMQ prefix; notes are per queue (the jobs they stand for are). */
export function createIntakeLedger(redis: RedisClient, queuePrefix: string): IntakeLedger {
  const key = (shard: number) => redisKeys.intakeNotes(queuePrefix, shard);
  /** Cross-offs waiting to be sent, by shard. */
  const waiting = new Map<number, Set<string>>();
  let timer: NodeJS.Timeout | undefined;
  const flush = async () => {
    clearTimeout(timer);
    timer = undefined;
    const shards = [...waiting];
    waiting.clear();
    await Promise.all(shards.map(([shard, members]) => redis.zrem(key(shard), ...members).catch(() => undefined)));
  };
  return {
    clearSoon(message) {
      const shard = shardOf(message.conversationKey);
      const members = waiting.get(shard) ?? new Set<string>();
      members.add(member(message));
      waiting.set(shard, members);
      if (timer) return;
      timer = setTimeout(() => void flush(), CROSS_OFF_DELAY_MS);
      // A stopping process flushes on close; one that dies leaves the notes to the sweeper.
      timer.unref();
    },
    flush,
    async note(message, now = Date.now()) {
      await redis.zadd(key(shardOf(message.conversationKey)), now, member(message));
    },
    async clear(message) {
      await redis.zrem(key(shardOf(message.conversationKey)), member(message));
    },
    async stale(before) {
      const shards = await Promise.all(
        Array.from({ length: SHARDS }, (_, shard) => redis.zrangebyscore(key(shard), '-inf', `(${before}`, 'LIMIT', 0, SWEEP_BATCH)),
      );
      const notes: IntakeNote[] = [];
      for (const [shard, raws] of shards.entries()) {
        for (const raw of raws) {
          let json: unknown;
          try {
            json = JSON.parse(raw);
          } catch {
            json = undefined;
          }
          const parsed = NoteSchema.safeParse(json);
          // Only this module writes notes; one it can't read is dropped rather than swept forever.
          if (parsed.success) notes.push({ conversationKey: parsed.data[0], messageId: parsed.data[1] });
          else await redis.zrem(key(shard), raw);
        }
      }
      return notes;
    },
  };
}

export interface IntakeSweeperOptions {
  ledger: IntakeLedger;
  queue: TurnQueue;
  logger: Logger;
  metrics: Metrics;
  /** How often a sweep runs. */
  intervalMs: number;
  /** How old a note is before its message counts as stranded (far above an intake's round trips). */
  staleMs: number;
}

/**
 * Adds a job for every message noted more than `staleMs` ago and never crossed off (its web
 * process died, or its add failed for good), then crosses it off. Every worker process sweeps;
 * the job id is the message's, so two sweeps of one note add one job.
 */
export function createIntakeSweeper(options: IntakeSweeperOptions) {
  const { ledger, queue, logger, metrics } = options;
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | undefined;

  const sweep = async () => {
    for (const note of await ledger.stale(Date.now() - options.staleMs)) {
      // Its own id (the intake's may be a completed job's, kept a day): sweeps of one note add one job.
      await enqueueTurn(queue, note, 'sweep|');
      await ledger.clear(note);
      metrics.increment('intake_swept_total');
      logger.warn('turn-enqueued-by-sweep', { ...note });
    }
  };

  return {
    start() {
      if (timer) return;
      timer = setInterval(() => {
        if (sweeping) return;
        sweeping = sweep()
          .catch((error: unknown) => logger.warn('intake-sweep-failed', { error }))
          .finally(() => (sweeping = undefined));
      }, options.intervalMs);
      timer.unref();
    },
    async close() {
      clearInterval(timer);
      timer = undefined;
      await sweeping;
    },
  };
}
