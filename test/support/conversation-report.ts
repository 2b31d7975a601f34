/**
 * What a conversation that was never answered looks like from the inside, for a test that waits
 * on replies: its inbox head, the head's turn state (frozen size, attempts, running mark, deaths,
 * a give-up decision), its lock, queued mark and outage wait, every turn job of it in the queue
 * (state, attempts, stalls, why it failed) and the service's log lines about it. A failure on a
 * loaded machine then says where the conversation stood, not only that it timed out.
 */
import type { Job, JobType } from 'bullmq';
import { redisKeys } from '../../src/queue/keys.js';
import type { TurnJob } from '../../src/queue/turn-queue.js';
import { logsAbout, type Harness } from './harness.js';

const JOB_STATES: JobType[] = ['active', 'waiting', 'delayed', 'prioritized', 'waiting-children', 'failed', 'completed'];

/** A line per job of `conversationKey` in the turns queue, grouped by state (the queue's jobs, read once). */
async function jobsOf(harness: Harness, conversationKey: string): Promise<string[]> {
  const lines: string[] = [];
  for (const state of JOB_STATES) {
    const jobs: Job<TurnJob>[] = await harness.services.queue.getJobs([state], 0, -1);
    for (const job of jobs.filter((candidate) => candidate.data?.conversationKey === conversationKey)) {
      const failed = job.failedReason ? ` failed: ${job.failedReason.slice(0, 160)}` : '';
      lines.push(
        `  ${state} ${job.name} ${job.id ?? '?'} attemptsMade=${job.attemptsMade} stalled=${job.stalledCounter} ` +
          `at=+${job.timestamp - Date.now()}ms${job.processedOn ? ` processed=+${job.processedOn - Date.now()}ms` : ''}` +
          `${job.finishedOn ? ` finished=+${job.finishedOn - Date.now()}ms` : ''}${failed}`,
      );
    }
  }
  return lines;
}

/** Where `conversationKey` stands in Redis and the queue, with the log lines about it (never throws). */
export async function conversationReport(harness: Harness, conversationKey: string): Promise<string> {
  const { redis } = harness.services;
  try {
    const [inbox, turnState, lock, lockTtl, queuedTtl, outage] = await Promise.all([
      redis.lrange(redisKeys.inbox(conversationKey), 0, -1),
      redis.hgetall(redisKeys.retry(conversationKey)),
      redis.get(redisKeys.lock(conversationKey)),
      redis.pttl(redisKeys.lock(conversationKey)),
      redis.pttl(redisKeys.queued(conversationKey)),
      redis.hgetall(redisKeys.outage(conversationKey)),
    ]);
    const entries = inbox.map((raw) => {
      const entry = JSON.parse(raw) as { messageId?: string; text?: string };
      return `${entry.messageId ?? '?'} ${JSON.stringify(entry.text ?? '')}`;
    });
    return [
      `conversation ${harness.logId(conversationKey)}:`,
      `  inbox (${inbox.length}): ${entries.join(' | ') || 'empty'}`,
      `  turn state: ${JSON.stringify(turnState)}`,
      `  lock: ${lock ?? 'free'}${lock ? ` (expires in ${lockTtl} ms)` : ''}; queued mark: ${queuedTtl > 0 ? `${queuedTtl} ms left` : 'none'}; outage: ${JSON.stringify(outage)}`,
      '  jobs:',
      ...(await jobsOf(harness, conversationKey)),
      '  logs:',
      logsAbout(harness.logs, harness.logId(conversationKey), 40).replace(/^/gm, '    '),
    ].join('\n');
  } catch (error) {
    return `conversation ${harness.logId(conversationKey)}: not readable (${String(error)})`;
  }
}
