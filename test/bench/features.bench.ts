/**
 * `npm run bench:features`: Redis commands a message with the features off, each feature on
 * alone and all on (`feature-budget.ts`), beside bare BullMQ's per job on the same Redis in the
 * same run, and each setting's messages a second against bare BullMQ measured just before it.
 * BENCH_FEATURE_MESSAGES (default 1500) messages a setting; BENCH_MONITOR=1 adds the commands by key.
 */
import { measureBareBullmq } from './bullmq-baseline.js';
import { measureFeatureBudget } from './feature-budget.js';
import { startBacking } from './rig.js';

const messages = Number(process.env.BENCH_FEATURE_MESSAGES ?? 1500);
const out = (line = '') => process.stdout.write(`${line}\n`);
const backing = await startBacking();
try {
  const bareOptions = { jobs: 5_000, senders: 32, concurrency: 32, lockTtlMs: 5_000 };
  const bare = await measureBareBullmq(backing.redis.url, backing.probe, bareOptions);
  out(`bare BullMQ: ${bare.jobsPerSecond.toFixed(0)} jobs/s, ${bare.commandsPerJob.toFixed(1)} Redis commands a job`);
  const reference = async () => (await measureBareBullmq(backing.redis.url, backing.probe, bareOptions)).jobsPerSecond;
  await measureFeatureBudget(backing, { messages, bareCommandsPerJob: bare.commandsPerJob, out, reference });
} finally {
  await backing.stop();
}
process.exit(0);
