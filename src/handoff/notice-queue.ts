/**
 * Hand-off notices go out through their own BullMQ queue: one job per hand-off and
 * destination, retried with backoff, each destination notified once through the send ledger
 * (`src/ledger/send-ledger.ts`): claimed before a send and marked after it. A job that finds its notice still "sending" (a
 * worker died mid-send) resolves it: a WhatsApp notice is looked up at Twilio and sent only if
 * it is not there; a webhook is posted again with the same idempotency key. A destination that
 * keeps failing (the lookup included) ends failed: logged, counted and listed by the admin API.
 */
import { DelayedError, Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { errorText } from '../errors/index.js';
import { sendOnce } from '../ledger/send-ledger.js';
import { noticeId, type HandoffRecord, type HandoffStore, type NoticeRecord } from './handoff-store.js';
import { buildNotice, type Notice } from './notice.js';
import { heldForOpening, noticeHeldUntil } from './out-of-hours.js';
import type { Destination, Team, Teams } from './teams.js';
import { NoticeSendError } from './webhook-sender.js';

const NOTICE_QUEUE_NAME = 'handoff-notices';

const NoticeJobSchema = z.object({ handoffId: z.string().min(1), destinationId: z.string().min(1) });
export type NoticeJob = z.infer<typeof NoticeJobSchema>;

/** The notice's job id: its ledger id, so a notice is queued once whoever queues it. */
export const noticeJobId = (handoffId: string, destinationId: string) => noticeId(handoffId, destinationId).replace(/[:|]/g, '_');

export interface NoticeSenders {
  /** Sends a WhatsApp notice; returns the channel's message id. Throws NoticeSendError. */
  whatsapp(to: string, notice: Notice, team: Team): Promise<string>;
  webhook(url: string, notice: Notice, idempotencyKey: string): Promise<void>;
  /** Finds a WhatsApp notice claimed at `claimedAt` whose outcome was lost; its SID, or undefined. */
  findWhatsapp?(to: string, notice: Notice, claimedAt: Date): Promise<string | undefined>;
}

/** What a sent notice leaves in the ledger: the channel's message id, where it has one. */
type NoticeReceipt = { channelMessageId?: string };

export interface NoticeQueueOptions {
  connection: ConnectionOptions;
  prefix?: string;
  attempts: number;
  backoffMs: number;
}

export function createNoticeQueue(options: NoticeQueueOptions) {
  const queue = new Queue<NoticeJob>(NOTICE_QUEUE_NAME, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    defaultJobOptions: {
      attempts: options.attempts,
      backoff: { type: 'exponential', delay: options.backoffMs },
      removeOnComplete: { age: 24 * 60 * 60 },
      removeOnFail: { age: 7 * 24 * 60 * 60 },
    },
  });
  return {
    queue,
    async enqueue(handoff: Pick<HandoffRecord, '_id' | 'destinations'>) {
      await queue.addBulk(
        handoff.destinations.map((destination: Destination) => ({
          name: 'notice',
          data: { handoffId: handoff._id, destinationId: destination.id },
          opts: { jobId: noticeJobId(handoff._id, destination.id) },
        })),
      );
    },
    close: () => queue.close(),
  };
}
export type NoticeQueue = ReturnType<typeof createNoticeQueue>;

export interface NoticeWorkerOptions extends NoticeQueueOptions {
  store: HandoffStore;
  teams: Teams;
  senders: NoticeSenders;
  /** The transcript link for a hand-off's notices: built from when it opened, so every destination and every retry gets the same link. */
  transcriptUrl(conversationId: string, issuedAt: Date): string;
  business: string;
  logger: Logger;
  metrics: Metrics;
  concurrency?: number;
  /** How long a worker may go silent before its job is retried elsewhere. */
  lockDurationMs?: number;
  /** The clock team hours are read on (tests move it). */
  now?: () => number;
}

export function createNoticeWorker(options: NoticeWorkerOptions): Worker<NoticeJob> {
  const { store, logger, metrics } = options;

  const processNotice = async (job: Job<NoticeJob>, token?: string) => {
    const parsed = NoticeJobSchema.safeParse(job.data);
    if (!parsed.success) {
      logger.error('notice-job-malformed', { jobId: job.id });
      return;
    }
    const { handoffId, destinationId } = parsed.data;
    const id = noticeId(handoffId, destinationId);
    if (job.attemptsStarted <= 1) metrics.observe('queue_wait_seconds', { queue: 'handoff-notices' }, Math.max(0, Date.now() - job.timestamp) / 1000);
    const [handoff, notice] = await Promise.all([store.get(handoffId), store.notice(handoffId, destinationId)]);
    const team = handoff ? options.teams[handoff.team] : undefined;
    if (!handoff || !notice || !team) {
      logger.error('notice-orphaned', { handoffId, destinationId });
      return;
    }
    if (notice.status !== 'pending' && notice.status !== 'sending') return;
    // A notice held for the opening whose hand-off was taken or ended meanwhile is never sent (held-notices.ts).
    if (handoff.status !== 'open' && notice.status === 'pending' && heldForOpening(team, notice.destination, handoff.createdAt)) {
      if (await store.withdrawNotice(id, `hand-off ${handoff.status} before the team opened`)) {
        metrics.increment('handoff_notices_total', { kind: notice.destination.kind, outcome: 'withdrawn' });
        logger.info('handoff-notice-withdrawn', { handoffId, destinationId, status: handoff.status });
      }
      return;
    }
    // Team hours: a WhatsApp notice of a hand-off opened while the team was closed waits for the opening (out-of-hours.ts).
    const now = (options.now ?? Date.now)();
    const heldUntil = noticeHeldUntil(team, notice.destination, handoff.createdAt, now);
    if (heldUntil !== undefined) {
      logger.info('handoff-notice-held', { handoffId, destinationId, until: new Date(heldUntil).toISOString() });
      await job.moveToDelayed(Date.now() + (heldUntil - now), token);
      throw new DelayedError();
    }
    // Built before the claim: a failure here leaves the notice pending for the retry.
    const content = buildNotice({
      handoff,
      team,
      transcriptUrl: options.transcriptUrl(handoff.conversationId, handoff.createdAt),
      business: options.business,
    });
    const destination = notice.destination;
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const retryable = (error: unknown) => (error instanceof NoticeSendError ? error.retryable : true);
    try {
      // One job per notice, but a stalled job may run twice: a notice found `sending` after a
      // lost claim may be another worker's send in flight, so this attempt fails and the retry
      // resolves it (looks it up or resends), so it never stays sending unattended.
      const result = await sendOnce<NoticeRecord, NoticeReceipt>({
        entry: notice,
        id,
        state: (stored) => (stored.status === 'pending' || stored.status === 'sending' ? stored.status : 'settled'),
        exclusive: false,
        store: {
          claim: () => store.claimNotice(id),
          readBack: () => store.notice(handoffId, destinationId),
          reclaim: () => store.reclaimNotice(id),
          markSent: async (receipt) => {
            // A teammate replying to this notice reaches this hand-off's customer (remembered first: once `sent`, a reply can come).
            if (receipt.channelMessageId) await store.recordRef(receipt.channelMessageId, handoffId);
            await store.markNoticeSent(id, receipt.channelMessageId);
          },
          release: (error) => store.releaseNotice(id, errorText(error)),
          markFailed: (error) => store.markNoticeFailed(id, 'failed', errorText(error)),
        },
        channel: {
          send: async () =>
            destination.kind === 'whatsapp'
              ? { channelMessageId: await options.senders.whatsapp(destination.target, content, team) }
              : (await options.senders.webhook(destination.target, content, id), {}),
          ...(destination.kind === 'whatsapp' && options.senders.findWhatsapp
            ? {
                lookup: async (stored: NoticeRecord) => {
                  const found = await options.senders.findWhatsapp?.(destination.target, content, stored.claimedAt ?? stored.updatedAt);
                  return found === undefined ? undefined : { channelMessageId: found };
                },
              }
            : {}),
          // The last attempt's failure is recorded below, whatever failed.
          afterFailedSend: (error) => (retryable(error) && !lastAttempt ? 'release' : 'keep'),
        },
        onResolved: (outcome) => logger.warn('handoff-notice-resolved', { handoffId, destinationId, outcome }),
      });
      if (result.outcome === 'skipped') return;
      metrics.increment('handoff_notices_total', { kind: destination.kind, outcome: 'sent' });
      if (result.outcome === 'found') return;
      // A notice held for the team's opening counts from the opening.
      const due = noticeHeldUntil(team, destination, handoff.createdAt, job.timestamp) ?? job.timestamp;
      metrics.observe('handoff_notice_latency_seconds', { kind: destination.kind }, Math.max(0, Date.now() - due) / 1000);
      logger.info('handoff-notified', { handoffId, destinationId, team: handoff.team, attempt: job.attemptsMade + 1 });
    } catch (error) {
      const message = errorText(error);
      if (retryable(error) && !lastAttempt) {
        logger.warn('handoff-notice-retrying', { handoffId, destinationId, attempt: job.attemptsMade + 1, error: message });
        throw error;
      }
      await store.markNoticeFailed(id, 'failed', message);
      metrics.increment('handoff_notices_total', { kind: destination.kind, outcome: 'failed' });
      logger.error('handoff-notice-failed', { handoffId, destinationId, attempts: job.attemptsMade + 1, error: message });
    }
  };

  const worker = new Worker<NoticeJob>(NOTICE_QUEUE_NAME, processNotice, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    concurrency: options.concurrency ?? 8,
    ...(options.lockDurationMs ? { lockDuration: options.lockDurationMs, stalledInterval: Math.max(1000, Math.floor(options.lockDurationMs / 2)) } : {}),
  });
  worker.on('error', (error) => logger.error('notice-worker-error', { error }));
  return worker;
}
