/**
 * Bare BullMQ on the bench's Redis, in this one process: the turns queue's own job options
 * (`createTurnQueue`, jobs added by `enqueueTurn`) and the turn worker's options, with a no-op
 * processor. What the pipeline's throughput and Redis commands are compared with.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { lockRenewIntervalMs } from '../../src/queue/conversation-lock.js';
import { createTurnQueue, enqueueTurn, TURN_QUEUE_NAME } from '../../src/queue/turn-queue.js';
import { commandDelta, redisCommandCalls } from './rig.js';

export interface BaselineResult {
  jobs: number;
  /** The median run's figure. */
  jobsPerSecond: number;
  /** Every measured run's figure, in order (a warm-up run before them is not counted). */
  runs: number[];
  commandsPerJob: number;
  /** Calls per job by command name. */
  commandsByName: Map<string, number>;
}

interface BaselineOptions {
  jobs: number;
  senders: number;
  concurrency: number;
  lockTtlMs: number;
}

/**
 * A warm-up run (a fifth of the jobs, not counted: it compiles the client's hot code, as the
 * pipeline's own warm-up phase does), then `runs` measured runs; the median run is the figure.
 * One run lasts about a second and a half here, and consecutive runs differ by up to half.
 */
export async function measureBareBullmq(redisUrl: string, probe: Redis, options: BaselineOptions & { runs?: number }): Promise<BaselineResult> {
  await measureOnce(redisUrl, probe, { ...options, jobs: Math.max(1, Math.round(options.jobs / 5)) });
  const measured: Omit<BaselineResult, 'runs'>[] = [];
  for (let run = 0; run < (options.runs ?? 3); run += 1) measured.push(await measureOnce(redisUrl, probe, options));
  const median = [...measured].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond)[Math.floor(measured.length / 2)]!;
  return { ...median, runs: measured.map((result) => result.jobsPerSecond) };
}

async function measureOnce(redisUrl: string, probe: Redis, options: BaselineOptions): Promise<Omit<BaselineResult, 'runs'>> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const prefix = 'bench-bare';
  const queue = createTurnQueue(connection, prefix);
  let completed = 0;
  let allDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const worker = new Worker(
    TURN_QUEUE_NAME,
    async () => {
      completed += 1;
      if (completed === options.jobs) allDone();
    },
    {
      connection,
      prefix,
      concurrency: options.concurrency,
      // The turn worker's lock options (src/queue/turn-worker.ts).
      lockDuration: options.lockTtlMs,
      lockRenewTime: lockRenewIntervalMs(options.lockTtlMs),
      stalledInterval: Math.min(1000, lockRenewIntervalMs(options.lockTtlMs)),
      maxStalledCount: 10,
    },
  );
  await worker.waitUntilReady();
  const before = await redisCommandCalls(probe);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: options.senders }, async () => {
      while (next < options.jobs) {
        const index = next++;
        await enqueueTurn(queue, { conversationKey: `whatsapp:+1555${String(index % 1000).padStart(7, '0')}`, messageId: `SMbare${index}` });
      }
    }),
  );
  await done;
  const seconds = (performance.now() - started) / 1000;
  const commandsByName = commandDelta(before, await redisCommandCalls(probe), options.jobs);
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await connection.quit();
  let commandsPerJob = 0;
  for (const count of commandsByName.values()) commandsPerJob += count;
  return { jobs: options.jobs, jobsPerSecond: options.jobs / seconds, commandsPerJob, commandsByName };
}
