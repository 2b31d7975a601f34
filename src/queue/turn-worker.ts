/**
 * The BullMQ worker that runs turns. For each job it takes the conversation's lock, then
 * answers the conversation's inbox from the head until it is empty — so one conversation's
 * turns run one at a time, in arrival order, while other conversations run concurrently.
 *
 * Bursts are coalesced: one turn answers every message waiting at its head (up to
 * MAX_BATCH_MESSAGES), with one reply keyed to the last of them. A message costs no wait: its
 * turn starts as soon as it is read. With a quiet period (`coalesceMs`, per channel), a message
 * that arrives before anything of the turn has left (a tool run, streamed text, a stored reply)
 * starts it over once (`TurnGate`: the model call is aborted) with the grown batch; that second
 * turn waits until the newest message is `coalesceMs` old (the job comes back when it is due,
 * holding neither a worker slot nor the lock) and is never started over again. A channel that
 * does not stream holds its reply until the batch's newest message is `coalesceMs` old; any
 * channel holds it while the customer reports typing. Once a turn starts, its batch is frozen in
 * the inbox, so a retry (or the next worker after a crash) answers exactly the same messages and
 * resumes the same reply. `coalesceMs` 0 turns it off: one turn per message.
 *
 * A killed worker's conversation is answered again within about one lock TTL plus a stall
 * check: the conversation lock and BullMQ's job lock share the TTL and are renewed every third
 * of it, and the stall check runs every second. A recovered job that still finds the dead
 * holder's lock comes back as it expires instead of completing.
 *
 * Retries are per message and by time, counted in one place (the inbox's retry state of its
 * head): a failed head is tried again after a doubling delay by a delayed "re-drive" job, and
 * no other job touches it before then, so sibling jobs can't use up its attempts. An outage
 * (classifyFailure: infrastructure) is retried until the message's own budget is spent; a
 * deterministic failure is given up on at once; an unknown one after a few attempts. Giving up
 * is never silent (see `giveUp`). While a failed head waits, the customer may be told so
 * (`holding`: a model outage's holding message): decided where its next attempt is scheduled,
 * sent then if it is due, or by a delayed "holding" job at its time when the next attempt would
 * start later. A job that finds the lock taken completes: the holder frees the lock only in the
 * step that acknowledges the inbox's last message (or re-checks the inbox after releasing
 * otherwise), and a dead holder's own job is re-run by the queue's stall check. A stopping worker finishes the turn it holds and starts no new one: its job goes
 * back to the queue for the next worker.
 *
 * Messages appended behind a held lock or a queued job add no job of their own, so a job that
 * fails for good (its attempts spent, or stalled too often) must not take them down with it: it
 * gives up on the batch whose turn it kept failing (visibly, as any give-up) and leaves a fresh
 * job for whatever is still in the inbox (see `rescue`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { RedisClient } from '../redis.js';
import { classifyFailure, type FailureKind } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { InboundMessage } from '../contracts/index.js';
import { CorruptInboxEntryError, MAX_BATCH_MESSAGES, type ConversationInbox, type InboxBatch } from './conversation-inbox.js';
import type { InboxNotices } from './inbox-notices.js';
import { holdConversationLock, lockExpiresInMs, lockRenewIntervalMs, lockRequest } from './conversation-lock.js';
import { TURN_QUEUE_NAME, TurnJobSchema, type TurnJob, type TurnQueue } from './turn-queue.js';
import { createSuspectTurn } from './suspect-turn.js';
import { createSoloTurns } from './solo-turns.js';
import { apologisedBefore, createConversationOutage, type ConversationWait } from './conversation-outage.js';
import { createTurnAdmission } from './turn-admission.js';
import { recordTurnDeath } from './turn-deaths.js';
import { startWorkerHeartbeat } from './worker-heartbeat.js';
import { openTurnGate, type Heard, type TurnGate } from './turn-gate.js';

export type { TurnGate } from './turn-gate.js';

/** Attempts at a message failing for an unknown reason (likely a bug) before it is given up on. */
const MAX_SUSPECT_ATTEMPTS = 3;
/**
 * Deaths of workers running a batch alone (as the suspect turn) that quarantine it (given up on as
 * `poison`), so one message never crash-loops a fleet. Any death makes the next attempt guarded and
 * a suspect turn; a death beside other turns is no evidence against the batch.
 */
const MAX_ALONE_DEATHS = 2;
/** Tries at rescuing a conversation whose job failed for good (Redis may be what failed it), a doubling delay apart. */
const RESCUE_ATTEMPTS = 8;
/** How often a turn waiting for a typing customer looks again (a report stands for the channel's quiet period). */
const TYPING_POLL_MS = 250;
/** The messages one turn answers, in arrival order. */
export interface InboundBatch {
  /** The batch's last message: the turn's inbound, the one its reply is keyed to. */
  message: InboundMessage;
  /** The messages before it in the batch, oldest first (empty for a message answered alone). */
  earlier: readonly InboundMessage[];
  /**
   * A worker died in a turn on this batch before: answer it without what can exhaust a worker
   * (no media, a bounded prompt). Guarded turns run alone in their worker; two that kill it quarantine the batch.
   */
  guarded?: boolean;
}

/**
 * Answers a batch. `signal` aborts the turn (lock lost, shutdown); `assertHeld` throws unless
 * this worker still surely holds the conversation: call it right before anything leaves. `gate`
 * (when the turn may be started over): `commit` before anything that must not happen twice.
 */
export type InboundHandler = (batch: InboundBatch, signal: AbortSignal, assertHeld: () => void, gate?: TurnGate) => Promise<void>;

/**
 * Why a message was given up on: `budget` (its retry time ran out), the failure kind, or
 * `poison` (MAX_ALONE_DEATHS workers died running it alone: quarantined, never retried).
 */
export type GiveUpReason = 'budget' | 'poison' | Exclude<FailureKind, 'infrastructure'>;

/**
 * Tells the customer and the operator that a message will not be answered. `assertHeld` is the
 * lock's fence: it throws unless the worker still surely holds the conversation, and the
 * handler calls it before anything it writes or sends (a worker that lost the lock leaves the
 * batch to the next holder, which finds it marked given up). `apologised`: the customer already
 * had the apology of this wait (another batch's, see `conversation-outage.ts`): none is sent
 * again. Never throws.
 */
export type GiveUpHandler = (batch: InboundBatch, failure: GiveUpFailure, assertHeld: () => void) => Promise<void>;
export interface GiveUpFailure {
  reason: GiveUpReason;
  error: unknown;
  attempts: number;
  apologised?: boolean;
}

/**
 * What the customer hears while a failed batch waits for its next attempt (a model outage's
 * holding message). The worker decides when, where the attempt is scheduled: when the next
 * attempt would start at or after `dueAt`, `send` runs at `dueAt` (at once if that has passed),
 * under the conversation's lock and only while the batch still waits on that same failure (not
 * given up on, no attempt since); when the next attempt starts first, its own outcome decides.
 */
export interface HoldingNotice {
  /**
   * When the customer should hear about this failure (ms); undefined: never (not an outage, a
   * teammate's entry). `waitingSince`: when the conversation's oldest waiting message arrived. No I/O.
   */
  dueAt(batch: InboundBatch, error: unknown, waitingSince: number): number | undefined;
  /** Tells the customer (`assertHeld` before anything leaves): true once the message is out (now or before). Never throws. */
  send(batch: InboundBatch, assertHeld: () => void): Promise<boolean>;
}

export interface TurnWorkerOptions {
  connection: ConnectionOptions;
  redis: RedisClient;
  inbox: ConversationInbox;
  /** Where re-drive jobs are added (the same queue the worker consumes). */
  queue: TurnQueue;
  handle: InboundHandler;
  giveUp: GiveUpHandler;
  /** What a customer hears while a failed batch waits for its next attempt; nothing when absent. */
  holding?: HoldingNotice;
  logger: Logger;
  metrics: Metrics;
  concurrency: number;
  /** The conversation lock's and BullMQ's job lock's TTL; both are renewed every third of it. */
  lockTtlMs: number;
  /**
   * The quiet period (see the module's comment): a burst's second turn starts, and a reply that
   * does not stream leaves, once the newest message is this old; 0 = one turn per message.
   */
  coalesceMs: number;
  /** Per channel id, in place of `coalesceMs`. */
  channelCoalesceMs?: Readonly<Record<string, number>>;
  /** Channels whose replies stream as they are written: held only while the customer types, never for the quiet period. */
  streamingChannels?: ReadonlySet<string>;
  /** Messages and typing reports arriving while this worker holds a conversation (without them no turn is started over). */
  notices?: InboxNotices;
  /** How long a message is retried from its first failure before it is given up on. */
  retryBudgetMs: number;
  /** The first retry delay; it doubles up to a tenth of the budget. */
  retryBackoffMs: number;
  /** Aborted when the process begins shutting down: no new turn starts after it. */
  shutdown: AbortSignal;
  prefix?: string;
}

type DrainOutcome =
  /** `released`: the last acknowledgement emptied the inbox and freed the lock in one step (nothing can have arrived since). */
  | { kind: 'drained'; released?: boolean }
  | { kind: 'busy' }
  | { kind: 'stopped' }
  /** The batch may still grow: its turn is due at `at`. */
  | { kind: 'quiet'; at: number }
  /** The head failed and is due again at `at`; the re-drive job `redriveId` exists for it. */
  | { kind: 'waiting'; at: number; redriveId: string };

/** The name of the delayed job that tries a failed head again when it is due. */
const REDRIVE_JOB = 'redrive';
/** The name of the delayed job that sends a waiting head's holding message when it is due. */
const HOLDING_JOB = 'holding';

const GIVE_UP_REASONS = new Set<string>(['budget', 'poison', 'deterministic', 'unknown']);
const giveUpReason = (stored: string): GiveUpReason => (GIVE_UP_REASONS.has(stored) ? (stored as GiveUpReason) : 'unknown');

const redriveJobId = (conversationKey: string, messageId: string, attempt: number) => `redrive|${conversationKey}|${messageId}|${attempt}`.replace(/:/g, '_');
const holdingJobId = (conversationKey: string, messageId: string, attempt: number) => `holding|${conversationKey}|${messageId}|${attempt}`.replace(/:/g, '_');

export function createTurnWorker(options: TurnWorkerOptions): Worker<TurnJob> {
  const { redis, inbox, handle, giveUp, logger, metrics, shutdown } = options;
  const policy = { firstDelayMs: options.retryBackoffMs, maxDelayMs: Math.max(options.retryBackoffMs, Math.floor(options.retryBudgetMs / 10)) };
  const busyDelayMs = Math.max(250, lockRenewIntervalMs(options.lockTtlMs));
  const coalesceFor = (channel: string): number => options.channelCoalesceMs?.[channel] ?? options.coalesceMs;
  const maxBatch = [options.coalesceMs, ...Object.values(options.channelCoalesceMs ?? {})].some((ms) => ms > 0) ? MAX_BATCH_MESSAGES : 1;
  const heartbeat = startWorkerHeartbeat(redis, options.lockTtlMs, logger);
  const solo = createSoloTurns();
  const outage = createConversationOutage(redis);
  const suspects = createSuspectTurn(redis, options.queue.qualifiedName, heartbeat.isDead);
  const batchOf = ({ entries, crashes }: InboxBatch): InboundBatch => {
    const messages = entries.map((entry) => entry.message);
    return { message: messages.at(-1) ?? entries[0].message, earlier: messages.slice(0, -1), ...(crashes > 0 ? { guarded: true } : {}) };
  };
  /** Gives up on a batch under the lock: the decision is stored first, so a holder after a lost lock finishes it instead of taking another turn. */
  const giveUpHeld = async (conversationKey: string, batch: InboxBatch, failure: GiveUpFailure, assertHeld: () => void): Promise<void> => {
    await inbox.markGivenUp(conversationKey, batch.entries[0].message.messageId, failure.reason);
    await giveUp(batchOf(batch), failure, assertHeld);
  };
  /**
   * A worker died in the turn marked `mark` on the head's batch: counted; a batch workers died in
   * MAX_ALONE_DEATHS times while running it alone is quarantined (the decision stored, as `givenUp`).
   */
  const countDeath = async (conversationKey: string, batch: InboxBatch, mark: string): Promise<InboxBatch> => {
    const { messageId, channel } = batch.entries[0].message;
    const deaths = await recordTurnDeath(redis, conversationKey, messageId, mark);
    logger.error('turn-worker-died', { conversationKey, messageId, crashes: deaths.crashes, alone: deaths.alone });
    metrics.increment('turn_crashes_total', { channel });
    if (deaths.alone < MAX_ALONE_DEATHS) return { ...batch, crashes: deaths.crashes };
    await inbox.markGivenUp(conversationKey, messageId, 'poison');
    return { ...batch, crashes: deaths.crashes, givenUp: 'poison' };
  };
  /**
   * Finishes giving up on a batch a holder that lost the lock decided on before acknowledging it
   * (the apology goes through the send ledger, so it reaches the customer once); returns the batch to acknowledge.
   */
  const finishGiveUp = async (conversationKey: string, read: InboxBatch, decided: string, assertHeld: () => void): Promise<InboxBatch> => {
    const batch = read.frozen ? read : { ...read, entries: [read.entries[0]] as const };
    const reason = giveUpReason(decided);
    const apologised = reason === 'budget' && apologisedBefore(await outage.read(conversationKey), batch.entries[0].message.messageId);
    const attempts = batch.retry?.attempts ?? 0;
    await giveUp(batchOf(batch), { reason, error: new Error('given up on before'), attempts, ...(apologised ? { apologised } : {}) }, assertHeld);
    return batch;
  };
  const newestOf = (batch: Pick<InboxBatch, 'entries'>): number => Math.max(...batch.entries.map((entry) => entry.message.receivedAt));
  /** When a batch that may still grow is due: its newest message quiet long enough, or the batch full. */
  const quietUntil = (batch: InboxBatch, now: number): number => {
    if (batch.entries.length >= MAX_BATCH_MESSAGES || batch.entries[0].message.teammate) return now;
    // A clock ahead of this one never makes a batch wait longer than the quiet period.
    return Math.min(newestOf(batch), now) + coalesceFor(batch.entries[0].message.channel);
  };
  /** When a fresh batch's reply may leave: at once on a streaming channel, else once its newest message is quiet long enough. */
  const holdUntil = ({ entries }: InboxBatch): number =>
    options.streamingChannels?.has(entries[0].message.channel) ? 0 : Math.min(newestOf({ entries }), Date.now()) + coalesceFor(entries[0].message.channel);
  /** The customer reported typing after the batch's newest message, and the report stands. */
  const typingAfter = (batch: InboxBatch): boolean => batch.typingAt !== undefined && batch.typingAt > newestOf(batch);

  const ensureRedrive = async (conversationKey: string, messageId: string, attempt: number, at: number): Promise<DrainOutcome> => {
    const redriveId = redriveJobId(conversationKey, messageId, attempt);
    // Idempotent: adding an existing job id is a no-op.
    await options.queue.add(REDRIVE_JOB, { conversationKey, messageId }, { jobId: redriveId, delay: Math.max(0, at - Date.now()) });
    return { kind: 'waiting', at, redriveId };
  };

  /** Handles a failed batch: schedules its next attempt (`waiting`), or gives up on it (the reason). */
  const onFailure = async (conversationKey: string, batch: InboxBatch, error: unknown, assertHeld: () => void): Promise<DrainOutcome | GiveUpReason> => {
    const { message } = batch.entries[0];
    const kind = classifyFailure(error);
    const now = Date.now();
    const state = await inbox.recordFailure(conversationKey, message.messageId, { ...policy, suspect: kind === 'unknown', now });
    // The budget counts from the conversation's oldest waiting message, not this batch's first failure.
    const wait = await outage.failed(conversationKey, Math.min(...batch.entries.map((entry) => entry.message.receivedAt)));
    const budgetSpent = now - wait.since >= options.retryBudgetMs;
    const reason: GiveUpReason | undefined =
      kind === 'deterministic'
        ? 'deterministic'
        : kind === 'unknown' && state.suspectAttempts >= MAX_SUSPECT_ATTEMPTS
          ? 'unknown'
          : budgetSpent
            ? 'budget'
            : undefined;
    if (reason) {
      // One apology per wait: the first batch given up on for its budget apologises for the messages behind it too.
      if (reason === 'budget') await outage.apologised(conversationKey, message.messageId, now);
      const apologised = reason === 'budget' && apologisedBefore(wait, message.messageId);
      await giveUpHeld(conversationKey, batch, { reason, error, attempts: state.attempts, ...(apologised ? { apologised } : {}) }, assertHeld);
      return reason;
    }
    const waiting = await ensureRedrive(conversationKey, message.messageId, state.attempts, state.nextAttemptAt);
    metrics.increment('inbound_retries_total', { channel: message.channel, kind });
    logger.warn('inbound-retrying', {
      conversationKey,
      messageId: message.messageId,
      messages: batch.entries.length,
      kind,
      attempts: state.attempts,
      retryInMs: state.nextAttemptAt - now,
      budgetLeftMs: options.retryBudgetMs - (now - wait.since),
      error,
    });
    await holdWhileWaiting(conversationKey, batch, error, { ...state, wait }, assertHeld);
    return waiting;
  };

  /**
   * The holding message of a batch whose next attempt was just scheduled (see `HoldingNotice`):
   * due before that attempt starts, it is sent now if due already, else by a delayed job at its
   * time (which sends it only if the batch still waits on this failure). Due after it: the next
   * attempt goes first, and decides again if it fails. A job that can't be added is logged: the
   * next failing attempt past the due time sends it.
   */
  const holdWhileWaiting = async (
    conversationKey: string,
    batch: InboxBatch,
    error: unknown,
    state: { attempts: number; nextAttemptAt: number; wait: ConversationWait },
    assertHeld: () => void,
  ): Promise<void> => {
    const { holding } = options;
    // Once per wait: not again for the batches behind the one that had it.
    const dueAt = state.wait.held ? undefined : holding?.dueAt(batchOf(batch), error, state.wait.since);
    if (!holding || dueAt === undefined || state.nextAttemptAt < dueAt) return;
    const delay = dueAt - Date.now();
    if (delay <= 0) return sendHolding(conversationKey, batch, assertHeld);
    const { messageId } = batch.entries[0].message;
    try {
      await options.queue.add(
        HOLDING_JOB,
        { conversationKey, messageId, attempt: state.attempts },
        { jobId: holdingJobId(conversationKey, messageId, state.attempts), delay },
      );
    } catch (addError) {
      logger.warn('holding-notice-unscheduled', { conversationKey, messageId, error: addError });
    }
  };

  /** Sends a waiting batch's holding message unless its conversation's wait had one, and notes it sent. */
  const sendHolding = async (conversationKey: string, batch: InboxBatch, assertHeld: () => void): Promise<void> => {
    if (!options.holding || (await outage.read(conversationKey))?.held) return;
    if (await options.holding.send(batchOf(batch), assertHeld)) await outage.held(conversationKey);
  };

  /** The head whose turn a job's attempt failed in, until the `failed` event of that attempt reads it. */
  const failedHeads = new Map<string, string>();
  /** Notes that job `jobId`'s attempt fails in the turn of the batch headed by `messageId`; returns the error. */
  const failedIn = (jobId: string | undefined, messageId: string, error: unknown): unknown => {
    if (jobId !== undefined) failedHeads.set(jobId, messageId);
    return error;
  };

  /**
   * Answers the conversation's inbox from the head, a batch per turn, until it is empty, under its
   * lock (for job `jobId`). `holding` (a holding job's): the head and failed attempt whose holding
   * message is due, sent if the head still waits on that attempt's failure.
   */
  const drain = async (conversationKey: string, jobId?: string, holding?: { messageId: string; attempt: number }): Promise<DrainOutcome> => {
    const abort = new AbortController();
    // What the conversation's notices say while this holds it: kept from each read of the head on
    // (a notice about a message that read found says no more than the read did), for its turn's gate.
    const heard: Heard = { notices: [] };
    const unwatch = options.notices?.watch(conversationKey, (notice) => (heard.listener ? heard.listener(notice) : heard.notices.push(notice)));
    // The lock and the head's first read go in one round trip (the read is used only if the lock was acquired).
    const request = lockRequest(conversationKey, options.lockTtlMs);
    let first: Awaited<ReturnType<ConversationInbox['lockAndBatch']>>;
    try {
      first = await inbox.lockAndBatch(conversationKey, maxBatch, request);
    } catch (error) {
      unwatch?.();
      throw error;
    }
    if (!first.acquired) {
      unwatch?.();
      return { kind: 'busy' };
    }
    const lock = holdConversationLock(redis, request, () => {
      logger.warn('conversation-lock-lost', { conversationKey });
      abort.abort(new Error('conversation lock lost'));
    });
    const assertHeld = () => {
      if (!lock.held) throw new Error(`lost the lock of ${conversationKey}`);
    };
    let prefetched: (() => InboxBatch | undefined) | undefined = first.batch;
    /** The mark of a turn this drain marked running and has not ended: cleared on the way out unless the worker dies. */
    let running: string | undefined;
    /** What lets this drain's turns start (the suspect turn alone, others while no suspect runs here): released on the way out. */
    const admission = createTurnAdmission(suspects, solo, lockRenewIntervalMs(options.lockTtlMs), logger, conversationKey);
    try {
      for (;;) {
        if (shutdown.aborted) return { kind: 'stopped' };
        if (!lock.held) throw new Error(`lost the lock of ${conversationKey} mid-drain`);
        let batch: InboxBatch | undefined;
        const read = prefetched;
        prefetched = undefined;
        if (!read) heard.notices = [];
        heard.listener = undefined;
        try {
          batch = read ? read() : await inbox.batch(conversationKey, maxBatch);
        } catch (error) {
          if (!(error instanceof CorruptInboxEntryError)) throw error;
          logger.error('inbox-entry-discarded', { conversationKey, error });
          metrics.increment('inbox_corrupt_total');
          await inbox.discardHead(conversationKey);
          continue;
        }
        if (!batch) return { kind: 'drained' };
        const head = batch.entries[0].message;
        let quarantined = false;
        // A batch given up on for its budget keeps the conversation's wait for those behind it; anything else ends it.
        let keepsWait = false;
        if (batch.running !== undefined && (await heartbeat.isDead(batch.running))) {
          // The worker that ran this batch's last turn died in it (an ended turn clears its mark;
          // one that only lost the lock is alive, cuts its turn short and clears it).
          batch = await countDeath(conversationKey, batch, batch.running);
          quarantined = batch.givenUp !== undefined;
          if (quarantined)
            await giveUp(batchOf(batch), { reason: 'poison', error: new Error('workers died answering it alone'), attempts: batch.crashes }, assertHeld);
        }
        const decided = batch.givenUp;
        if (quarantined) {
          // Acknowledged below, as any batch given up on.
        } else if (decided !== undefined) {
          batch = await finishGiveUp(conversationKey, batch, decided, assertHeld);
          keepsWait = decided === 'budget';
        } else if (batch.retry && batch.retry.nextAttemptAt > Date.now()) {
          // Still waiting on the failure that scheduled this holding job (no attempt since: the
          // same count, and none can run while this holds the lock): the customer hears from us now.
          if (holding?.messageId === head.messageId && holding.attempt === batch.retry.attempts) await sendHolding(conversationKey, batch, assertHeld);
          return ensureRedrive(conversationKey, head.messageId, batch.retry.attempts, batch.retry.nextAttemptAt);
        } else {
          const coalescing = !batch.frozen && coalesceFor(head.channel) > 0;
          if (!batch.frozen && !coalescing && batch.entries.length > 1) {
            // This channel answers one message per turn.
            batch = { ...batch, entries: [batch.entries[0]], behind: batch.behind + batch.entries.length - 1 };
          }
          if (coalescing && !head.teammate) {
            // A single message starts at once; the turn after a restart waits for the burst to end.
            const now = Date.now();
            const at = typingAfter(batch) ? now + TYPING_POLL_MS : batch.restarted ? quietUntil(batch, now) : now;
            if (at > now) {
              logger.debug('turn-coalescing', { conversationKey, messages: batch.entries.length, dueInMs: at - now, typing: typingAfter(batch) });
              return { kind: 'quiet', at };
            }
          }
          // A batch a worker died in runs only as the one suspect turn, alone in this process; until then it waits, unmarked.
          const mark = await admission.admit(batch.crashes > 0, heartbeat.runningMark(request.token), abort.signal);
          if (mark === undefined) {
            logger.info(batch.crashes > 0 ? 'turn-suspect-waiting' : 'turn-waiting-for-suspect', { conversationKey, messageId: head.messageId });
            return { kind: 'quiet', at: Date.now() + busyDelayMs };
          }
          // Frozen (every later attempt answers the same messages) and marked running, in one step.
          if (batch.frozen) await inbox.markRunning(conversationKey, head.messageId, mark);
          else batch = await inbox.freeze(conversationKey, batch, mark);
          running = mark;
          const gate = coalescing ? openTurnGate(batch, heard, !batch.restarted, holdUntil(batch)) : undefined;
          const turn = batchOf(batch);
          if (turn.earlier.length > 0) metrics.increment('inbound_coalesced_total', { channel: head.channel }, turn.earlier.length);
          try {
            await handle(turn, abort.signal, assertHeld, gate);
          } catch (error) {
            // A turn cut short by a lost lock is the next holder's to retry: nothing is counted.
            if (abort.signal.aborted) throw failedIn(jobId, head.messageId, error);
            if (gate?.restart.aborted) {
              // Nothing of it left: the batch is read again, grown, and answered by the next turn.
              await inbox.restart(conversationKey, head.messageId);
              running = undefined;
              admission.ended();
              metrics.increment('turn_restarts_total', { channel: head.channel });
              logger.info('turn-restarted', { conversationKey, messageId: head.messageId, messages: batch.entries.length });
              continue;
            }
            const outcome = await onFailure(conversationKey, batch, error, assertHeld).catch((failure: unknown) => {
              throw failedIn(jobId, head.messageId, failure);
            });
            // The failure's record cleared the running mark.
            running = undefined;
            admission.ended();
            if (typeof outcome !== 'string') return outcome;
            keepsWait = outcome === 'budget';
          }
        }
        if (!lock.held) throw new Error(`lost the lock of ${conversationKey} before acknowledging`);
        const done = batch;
        // The acknowledgement reads the next batch in the same step: what the notices say from
        // here on is kept for that batch's turn (as before a read of its own).
        heard.listener = undefined;
        heard.notices = [];
        const acknowledged = await lock.releaseWith(async (token) => {
          const result = await inbox.acknowledgeAndBatch(conversationKey, done, token, maxBatch, keepsWait);
          return { released: result.released, value: result };
        });
        // The acknowledgement cleared the batch's turn state, its running mark with it.
        running = undefined;
        admission.ended();
        // A batch a worker died in is answered: the next suspect may run, and this process takes other turns again.
        await admission.release();
        logger.debug('inbound-acknowledged', { conversationKey, messageIds: batch.entries.map((entry) => entry.message.messageId) });
        if (acknowledged.released) return { kind: 'drained', released: true };
        prefetched = acknowledged.batch;
      }
    } finally {
      unwatch?.();
      // A turn cut short (lost lock, an error around it) is no worker's death: its mark goes.
      if (running !== undefined)
        await inbox.turnStopped(conversationKey, running).catch((error: unknown) => logger.warn('turn-mark-uncleared', { conversationKey, error }));
      admission.ended();
      await admission.release();
      await lock.release();
    }
  };

  /** One try at `rescue`. */
  const rescueOnce = async (job: Job<TurnJob>, conversationKey: string, failedHead: string | undefined, error: unknown): Promise<void> => {
    const request = lockRequest(conversationKey, options.lockTtlMs);
    const first = await inbox.lockAndBatch(conversationKey, maxBatch, request);
    let delay = 0;
    let gaveUp: string | undefined;
    if (first.acquired) {
      const lock = holdConversationLock(redis, request, () => logger.warn('conversation-lock-lost', { conversationKey }));
      try {
        let batch: InboxBatch | undefined;
        try {
          batch = first.batch();
        } catch (readError) {
          // A corrupt head is discarded by the fresh job's drain.
          if (!(readError instanceof CorruptInboxEntryError)) throw readError;
        }
        const head = batch?.entries[0].message;
        // A job that failed outside a turn (or stalled too often: maybe its head kills the worker)
        // counts against the head as an unknown failure would, so no head is retried forever.
        const suspect =
          head && failedHead === undefined
            ? await inbox.recordFailure(conversationKey, head.messageId, { ...policy, suspect: true, now: Date.now() })
            : undefined;
        if (batch && head && (head.messageId === failedHead || (suspect?.suspectAttempts ?? 0) >= MAX_SUSPECT_ATTEMPTS)) {
          // Only what its turn answered: an unfrozen batch's later messages were never in one.
          const failed: InboxBatch = batch.frozen ? batch : { ...batch, entries: [batch.entries[0]] };
          // The decision is stored first: nothing but the fresh job below would come back to this
          // conversation, so a lock lost on the way leaves the give-up for that job's holder to
          // finish (the apology through the send ledger, once), never the head answered again.
          await giveUpHeld(conversationKey, failed, { reason: 'unknown', error, attempts: suspect?.attempts ?? job.attemptsMade }, () => {
            if (!lock.held) throw new Error(`lost the lock of ${conversationKey}`);
          });
          gaveUp = head.messageId;
          if (lock.held) {
            const freed = await lock.releaseWith(async (token) => {
              const released = await inbox.acknowledge(conversationKey, suspect ? { ...failed, retry: suspect } : failed, token);
              return { released, value: released };
            });
            if (freed) return;
          } else {
            logger.warn('turn-job-rescue-lock-lost', { conversationKey, failedJobId: job.id, messageId: head.messageId });
          }
        }
      } finally {
        await lock.release();
      }
      // Re-checked after releasing: a message appended while this held the lock added no job.
      if ((await inbox.size(conversationKey)) === 0) return;
    } else {
      // Its holder answers the inbox before it lets go; a dead holder's lock expires first.
      delay = (await lockExpiresInMs(redis, conversationKey)) + 50;
    }
    const jobId = `rescue|${conversationKey}|${Date.now()}`.replace(/:/g, '_');
    await options.queue.add('turn', { conversationKey, messageId: failedHead ?? job.data.messageId }, { jobId, delay });
    logger.warn('turn-job-rescued', { conversationKey, failedJobId: job.id, gaveUp, jobId });
  };

  /**
   * After a job of the conversation failed for good. The messages behind its batch added no job
   * of their own (they rode on it), so nothing else would come back to them: give up on the batch
   * whose turn the job kept failing in (`failedHead`; visibly, as any give-up), then leave a fresh
   * job for whatever is left. A job that failed outside a turn (or stalled too often) counts as
   * an unknown failure of the head (given up on after MAX_SUSPECT_ATTEMPTS such), and the fresh
   * job tries the head again once its retry delay has passed. A rescue that fails (Redis may be
   * what failed the job) is tried again, RESCUE_ATTEMPTS times a doubling delay apart, unless the
   * process stops. Never throws.
   */
  const rescue = async (job: Job<TurnJob>, conversationKey: string, failedHead: string | undefined, error: unknown): Promise<void> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await rescueOnce(job, conversationKey, failedHead, error);
        return;
      } catch (rescueError) {
        const last = attempt >= RESCUE_ATTEMPTS || shutdown.aborted;
        logger.error(last ? 'turn-job-rescue-failed' : 'turn-job-rescue-retrying', { conversationKey, failedJobId: job.id, attempt, error: rescueError });
        if (last) return;
        try {
          await sleep(policy.firstDelayMs * 2 ** (attempt - 1), undefined, { signal: shutdown });
        } catch {
          return;
        }
      }
    }
  };

  /** Puts the job back in the queue, due at `at`, without counting an attempt. */
  const comeBackAt = async (job: Job<TurnJob>, token: string | undefined, at: number): Promise<never> => {
    await job.moveToDelayed(at, token);
    throw new DelayedError();
  };

  const processTurn = async (job: Job<TurnJob>, token?: string): Promise<void> => {
    const parsed = TurnJobSchema.safeParse(job.data);
    if (!parsed.success) {
      logger.error('job-malformed', { jobId: job.id });
      return;
    }
    const { conversationKey, messageId, attempt } = parsed.data;
    const holding = job.name === HOLDING_JOB && attempt !== undefined ? { messageId, attempt } : undefined;
    // Queue wait of the job's first pickup (later pickups are re-drives and busy re-polls).
    if (job.attemptsStarted <= 1)
      metrics.observe('queue_wait_seconds', { queue: 'turns' }, Math.max(0, Date.now() - job.timestamp - (job.opts.delay ?? 0)) / 1000);
    // The holder re-checks the inbox after releasing, so a message that arrived meanwhile is
    // answered by it. A stopping worker hands its job back for the next worker.
    for (;;) {
      if (shutdown.aborted) return comeBackAt(job, token, Date.now() + busyDelayMs);
      const outcome = await drain(conversationKey, job.id, holding);
      if (outcome.kind === 'busy') {
        // The holder re-checks the inbox after releasing, so it answers this job's message too;
        // a holder that dies leaves its own job active, and the stall check runs it again.
        // Completing here (rather than coming back) costs a burst no extra job cycles.
        metrics.increment('turn_lock_busy_total');
        // That recovered job may find the dead holder's lock not yet expired (the two locks are
        // renewed apart): it comes back as it expires rather than leave the conversation to nobody.
        if (job.stalledCounter > 0) return comeBackAt(job, token, Date.now() + (await lockExpiresInMs(redis, conversationKey)) + 50);
        // A re-drive job is the one job a failed head waits for: a holder that found the head not
        // yet due left it to this job and completed, so this job never completes on a busy lock.
        // Nor does a holding job: no other job sends its message while the head waits.
        if (job.name === REDRIVE_JOB || holding) {
          logger.debug('turn-lock-busy-redrive', { conversationKey, jobId: job.id });
          return comeBackAt(job, token, Date.now() + Math.min(busyDelayMs, (await lockExpiresInMs(redis, conversationKey)) + 50));
        }
        return;
      }
      // The quiet period: come back when the batch is due (any job of the burst may be the one).
      if (outcome.kind === 'quiet') return comeBackAt(job, token, outcome.at);
      if (outcome.kind === 'stopped') {
        logger.info('turn-job-handed-back', { conversationKey });
        return comeBackAt(job, token, Date.now() + busyDelayMs);
      }
      if (outcome.kind === 'waiting') {
        // The re-drive job of this attempt comes back when it is due (it can't re-add itself);
        // any other job leaves the message to it.
        if (job.id === outcome.redriveId) return comeBackAt(job, token, outcome.at);
        return;
      }
      if (outcome.released || (await inbox.size(conversationKey)) === 0) return;
    }
  };

  const worker = new Worker<TurnJob>(TURN_QUEUE_NAME, processTurn, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    concurrency: options.concurrency,
    // A killed worker's job is found stalled within a TTL plus one check (one script a second).
    lockDuration: options.lockTtlMs,
    lockRenewTime: lockRenewIntervalMs(options.lockTtlMs),
    stalledInterval: Math.min(1000, lockRenewIntervalMs(options.lockTtlMs)),
    // A holder killed mid-turn leaves its job active: the stall check runs it again, so a
    // conversation is only abandoned to the next message after this many kills in a row.
    maxStalledCount: 10,
    autorun: true,
  });
  worker.on('failed', (job, error) => {
    metrics.increment('turn_job_failed_total');
    logger.error('turn-job-failed', { jobId: job?.id, attempts: job?.attemptsMade, error });
    if (!job?.id) return;
    const failedHead = failedHeads.get(job.id);
    failedHeads.delete(job.id);
    // Final (its attempts spent, or stalled too often): nothing else would come back to its inbox.
    const parsed = TurnJobSchema.safeParse(job.data);
    if (job.finishedOn !== undefined && parsed.success) void rescue(job, parsed.data.conversationKey, failedHead, error);
  });
  worker.on('error', (error) => logger.error('worker-error', { error }));
  worker.on('closed', () => {
    heartbeat.stop();
  });
  return worker;
}
