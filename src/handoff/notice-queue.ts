/**
 * Hand-off notices go out through their own BullMQ queue: one job per hand-off and
 * destination, retried with backoff, each destination notified once — the notice ledger is
 * claimed before a send and marked after it. A job that finds its notice still "sending" (a
 * worker died mid-send) resolves it: a WhatsApp notice is looked up at Twilio and sent only if
 * it is not there; a webhook is posted again with the same idempotency key. A destination that
 * keeps failing (the lookup included) ends failed: logged, counted and listed by the admin API.
 */
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { noticeId, type HandoffRecord, type HandoffStore } from './handoff-store.js';
import { buildNotice, type Notice } from './notice.js';
import type { Destination, Team, Teams } from './teams.js';
import { NoticeSendError } from './webhook-sender.js';

const NOTICE_QUEUE_NAME = 'handoff-notices';

const NoticeJobSchema = z.object({ handoffId: z.string().min(1), destinationId: z.string().min(1) });
export type NoticeJob = z.infer<typeof NoticeJobSchema>;

export interface NoticeSenders {
  /** Sends a WhatsApp notice; returns the channel's message id. Throws NoticeSendError. */
  whatsapp(to: string, notice: Notice, team: Team): Promise<string>;
  webhook(url: string, notice: Notice, idempotencyKey: string): Promise<void>;
  /** Finds a WhatsApp notice claimed at `claimedAt` whose outcome was lost; its SID, or undefined. */
  findWhatsapp?(to: string, notice: Notice, claimedAt: Date): Promise<string | undefined>;
}

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
          opts: { jobId: noticeId(handoff._id, destination.id).replace(/[:|]/g, '_') },
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
  transcriptUrl(conversationId: string): string;
  business: string;
  logger: Logger;
  metrics: Metrics;
  concurrency?: number;
  /** How long a worker may go silent before its job is retried elsewhere. */
  lockDurationMs?: number;
}

export function createNoticeWorker(options: NoticeWorkerOptions): Worker<NoticeJob> {
  const { store, logger, metrics } = options;

  const processNotice = async (job: Job<NoticeJob>) => {
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
    // Built before the claim: a failure here leaves the notice pending for the retry.
    const content = buildNotice({
      handoff,
      team,
      transcriptUrl: options.transcriptUrl(handoff.conversationId),
      business: options.business,
    });
    if (notice.status === 'pending' && !(await store.claimNotice(id))) {
      // One job per notice: a claim that applied but was reported lost leaves it `sending`;
      // the retry resolves it (looks it up or resends), so it never stays sending unattended.
      if ((await store.notice(handoffId, destinationId))?.status === 'sending') throw new Error(`notice ${id} claim outcome was lost`);
      return;
    }
    // While an uncertain notice is being looked up it stays `sending`, so a retry looks again.
    let resolving = notice.status === 'sending';
    try {
      const destination = notice.destination;
      if (notice.status === 'sending') {
        const found =
          destination.kind === 'whatsapp' && options.senders.findWhatsapp
            ? await options.senders.findWhatsapp(destination.target, content, notice.claimedAt ?? notice.updatedAt)
            : undefined;
        logger.warn('handoff-notice-resolved', { handoffId, destinationId, outcome: found ? 'found' : 'resent' });
        if (found) {
          await store.markNoticeSent(id, found);
          metrics.increment('handoff_notices_total', { kind: destination.kind, outcome: 'sent' });
          return;
        }
        await store.reclaimNotice(id);
        resolving = false;
      }
      const channelMessageId =
        destination.kind === 'whatsapp'
          ? await options.senders.whatsapp(destination.target, content, team)
          : (await options.senders.webhook(destination.target, content, id), undefined);
      await store.markNoticeSent(id, channelMessageId);
      metrics.increment('handoff_notices_total', { kind: destination.kind, outcome: 'sent' });
      metrics.observe('handoff_notice_latency_seconds', { kind: destination.kind }, Math.max(0, Date.now() - job.timestamp) / 1000);
      logger.info('handoff-notified', { handoffId, destinationId, team: handoff.team, attempt: job.attemptsMade + 1 });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const retryable = error instanceof NoticeSendError ? error.retryable : true;
      const attempts = job.opts.attempts ?? 1;
      if (retryable && job.attemptsMade + 1 < attempts) {
        if (!resolving) await store.releaseNotice(id, message);
        logger.warn('handoff-notice-retrying', { handoffId, destinationId, attempt: job.attemptsMade + 1, error: message });
        throw error;
      }
      await store.markNoticeFailed(id, 'failed', message);
      metrics.increment('handoff_notices_total', { kind: notice.destination.kind, outcome: 'failed' });
      logger.error('handoff-notice-failed', { handoffId, destinationId, attempts: job.attemptsMade + 1, error: message });
    }
  };

  const worker = new Worker<NoticeJob>(NOTICE_QUEUE_NAME, processNotice, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    concurrency: options.concurrency ?? 8,
    ...(options.lockDurationMs
      ? { lockDuration: options.lockDurationMs, stalledInterval: Math.max(1000, Math.floor(options.lockDurationMs / 2)) }
      : {}),
  });
  worker.on('error', (error) => logger.error('notice-worker-error', { error }));
  return worker;
}
