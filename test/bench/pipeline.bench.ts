/**
 * `npm run bench` (first part): the WhatsApp pipeline measured against bare BullMQ on the same
 * Redis in the same run. Web and worker run as two processes (`service-process.ts`: real Redis
 * and FerretDB, the fake Twilio API, the deterministic model answering at once); the bench sends
 * signed webhooks and reads replies at the fake Twilio API. Phases:
 *   1. bare BullMQ: the turns queue's job options, a no-op processor — jobs/s, Redis commands/job;
 *   2. after three warm-up phases, sustained throughput on an empty store (the warm-ups'
 *      messages only) — messages/s, webhook ack, Redis commands and
 *      MongoDB commands (driver command monitoring, per process) per message, and where a
 *      message's time goes: the means of the processes' own stage histograms over the phase;
 *   3. paced 100 msgs/s — pipeline overhead (webhook sent → reply at Twilio; the model is instant);
 *   4. the store seeded to ≥ 50k messages (history.ts), then the throughput phase again;
 *   5. a worker killed mid-turn — how long until its conversation is answered;
 *   6. FerretDB paused (SIGSTOP) — how many messages are answered while it is: the honest count
 *      of synchronous MongoDB round trips is 0 only if all are;
 *   7. Redis commands a message by feature (`feature-budget.ts`: off, each alone, all on).
 * Then the issue's target table. BENCH_CPU_PROFILE=<dir> records a CPU profile of each process.
 * Loopback only; every phase bounded in count and time.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { TURN_QUEUE_NAME } from '../../src/queue/turn-queue.js';
import { QUEUE_PREFIX } from '../../src/redis.js';
import { newTwilioSid } from '../support/twilio-signature.js';
import { findFreePort } from '../support/services.js';
import { measureBareBullmq } from './bullmq-baseline.js';
import { measureFeatureBudget } from './feature-budget.js';
import { countStoredMessages, seedHistory, TEMPLATE_NUMBER, templateSid } from './history.js';
import {
  benchNumber,
  cpuProfileDirectory,
  cpuSeconds,
  findProcess,
  fromSource,
  histogramDelta,
  histogramPercentile,
  runQueueWaitMs,
  machineBusySeconds,
  machineStallMs,
  startCpuProbe,
  redisLatencyEvents,
  writeSyscalls,
  histogramTotals,
  mongoDelta,
  percentile,
  commandDelta,
  redisCommandCalls,
  serviceEnv,
  sleep,
  spawnServiceProcess,
  startBacking,
  summarizeProfiles,
  sumCommands,
  webhookSender,
  type LoopStats,
  type ServiceChild,
} from './rig.js';

const env = process.env;
const MESSAGES = Number(env.BENCH_MESSAGES ?? 3000);
const SENDERS = Number(env.BENCH_SENDERS ?? 32);
const PER_NUMBER = 3;
/** A sustained phase starts no new number after this long (a slow pipeline keeps the bench bounded). */
const PHASE_SECONDS = Number(env.BENCH_PHASE_SECONDS ?? 60);
const BULLMQ_JOBS = Number(env.BENCH_BULLMQ_JOBS ?? 10_000);
const STORED_MESSAGES = Number(env.BENCH_STORED_MESSAGES ?? 50_000);
const PACED_RATE = 100;
const PACED_SECONDS = Number(env.BENCH_PACED_SECONDS ?? 5);
const CONCURRENCY = 32;
/** TURN_LOCK_TTL_MS as production runs it (its default): the killed-worker figure depends on it. */
const LOCK_TTL_MS = 5_000;
/** How long a phase waits for its last replies once it stopped sending; what is unanswered by then counts as slower than that. */
const REPLY_WAIT_MS = Number(env.BENCH_REPLY_WAIT_SECONDS ?? 60) * 1000;
/** Messages a sustained phase lets wait for their reply before it sends more. */
const MAX_OUTSTANDING = 200;

if (cpuProfileDirectory) await mkdir(cpuProfileDirectory, { recursive: true });
const backing = await startBacking();
const { twilio, probe } = backing;
const out = (line = '') => process.stdout.write(`${line}\n`);
const row = (name: string, value: string) => out(`  ${name.padEnd(58)} ${value}`);
const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'unanswered');
const ms = (values: readonly number[]) => `${fixed(percentile(values, 50), 1)} / ${fixed(percentile(values, 99), 1)}`;

out(
  `\nWhatsApp pipeline benchmark — web and worker processes (${fromSource ? 'TypeScript under tsx' : 'compiled, as production runs'}), Redis, ${env.MONGODB_URI ? 'MONGODB_URI' : 'FerretDB/SQLite'}, fake Twilio, instant model; node ${process.versions.node}`,
);

// 1 — bare BullMQ, same Redis, same job and worker options, no-op processor.
const bareOptions = { jobs: BULLMQ_JOBS, senders: SENDERS, concurrency: CONCURRENCY, lockTtlMs: LOCK_TTL_MS };
const bare = await measureBareBullmq(backing.redis.url, probe, bareOptions);
out(`bare BullMQ (turns queue options, no-op processor, one process): ${bare.jobs} jobs per run, after a warm-up run`);
row('jobs/s (median of the runs; each run)', `${bare.jobsPerSecond.toFixed(0)}  (${bare.runs.map((run) => run.toFixed(0)).join(', ')})`);
row('Redis commands per job', bare.commandsPerJob.toFixed(1));

const port = await findFreePort();
const childEnv = serviceEnv(backing, port, { WORKER_CONCURRENCY: String(CONCURRENCY), TURN_LOCK_TTL_MS: String(LOCK_TTL_MS) });
const web = await spawnServiceProcess('web', childEnv);
let worker: ServiceChild = await spawnServiceProcess('worker', childEnv);
const sender = webhookSender(port);
const ferretPid = backing.ferret ? await findProcess((line) => line.includes(`--listen-addr=${new URL(backing.ferret?.uri ?? '').host}`)) : undefined;
// redis-server rewrites its command line to `redis-server 127.0.0.1:<port>`.
const redisPid = await findProcess((line) => line.startsWith('redis-server') && line.includes(`:${backing.redis.port}`));
/** Each process's CPU seconds so far: FerretDB, Redis, web, worker, and this one (the senders and the fake Twilio API). */
const cpu = () => Promise.all([cpuSeconds(ferretPid), cpuSeconds(redisPid), cpuSeconds(web.pid), cpuSeconds(worker.pid), cpuSeconds(process.pid)]);
/** Each process's run-queue wait so far (ms), in the same order: time it was runnable but every core was busy. */
const runQueue = () => Promise.all([ferretPid, redisPid, web.pid, worker.pid, process.pid].map((pid) => runQueueWaitMs(pid)));
const runQueueRow = (before: readonly number[], after: readonly number[], seconds: number) =>
  row(
    '  run-queue wait (ms per s, runnable but no free core): FerretDB / Redis / web / worker / bench',
    after.map((value, index) => ((value - (before[index] ?? 0)) / seconds).toFixed(0)).join(' / '),
  );

/** A process's event-loop delay (sampled every 5 ms: 5 is an idle loop) and its GC pauses over a phase. */
const loopRow = (name: string, loop: LoopStats) =>
  row(
    `  event loop ${name}: delay p50 / p99 / max; GC pauses count, total, max`,
    `${loop.p50.toFixed(1)} / ${loop.p99.toFixed(1)} / ${loop.max.toFixed(1)}; ${loop.gcCount}, ${loop.gcTotal.toFixed(0)}, ${loop.gcMax.toFixed(1)} ms`,
  );

/** The replies whose text starts with `ok <prefix>`, gathered incrementally (a filter over every reply per webhook made the bench its own bottleneck). */
const matched = new Map<string, { scanned: number; replies: (typeof twilio.messages)[number][] }>();
function repliesFor(prefix: string) {
  const entry = matched.get(prefix) ?? { scanned: 0, replies: [] };
  matched.set(prefix, entry);
  for (; entry.scanned < twilio.messages.length; entry.scanned += 1) {
    const message = twilio.messages[entry.scanned];
    if (message?.body.startsWith(`ok ${prefix}`)) entry.replies.push(message);
  }
  return entry.replies;
}
const repliesTo = (prefix: string) => repliesFor(prefix).length;

/** Entries in the transcript outbox (every database's: the bench's Redis holds only this run's). */
async function outboxBacklog() {
  const keys = await probe.keys('asst:tx:outbox:*');
  const lengths = await Promise.all(keys.map((key) => probe.xlen(key)));
  return lengths.reduce((sum, length) => sum + length, 0);
}

/**
 * Waits (at most REPLY_WAIT_MS) until every message sent so far is answered and the transcript
 * writer has emptied the outbox, so no phase inherits another's backlog (a sustained phase ends
 * with thousands of records still to write: the next phase would share the cores with that).
 */
async function drain() {
  const deadline = Date.now() + REPLY_WAIT_MS;
  while (twilio.messages.length < sender.sentAt.size && Date.now() < deadline) await sleep(100);
  const left = sender.sentAt.size - twilio.messages.length;
  if (left > 0) out(`  (${left} messages of earlier phases still unanswered)`);
  while ((await outboxBacklog()) > 0 && Date.now() < deadline) await sleep(100);
  const backlog = await outboxBacklog();
  if (backlog > 0) out(`  (${backlog} transcript outbox entries of earlier phases still unwritten)`);
}

/**
 * Waits (≤ 20 s: the usage flush runs every 10 s) until the transcript outbox is empty and every
 * turn's usage entry is folded: what a phase left for later. False if something was still left.
 */
async function deferredWorkDone() {
  const deadline = Date.now() + 20_000;
  const usageBacklog = async () => {
    const keys = await probe.keys('asst:{usage:*}:pending');
    const lengths = await Promise.all(keys.map((key) => probe.llen(key)));
    return lengths.reduce((sum, length) => sum + length, 0);
  };
  while (((await outboxBacklog()) > 0 || (await usageBacklog()) > 0) && Date.now() < deadline) await sleep(100);
  return (await outboxBacklog()) === 0 && (await usageBacklog()) === 0;
}

/** The replies whose text starts with `ok <prefix>` (the model echoes the message), once there are `count` or after `timeoutMs`. */
async function waitForReplies(prefix: string, count: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (repliesTo(prefix) < count && Date.now() < deadline) await sleep(50);
  return [...repliesFor(prefix)];
}

/**
 * Sends `count` messages from numbers in `area` (3 each, in order per number) with `SENDERS` at once.
 * A warm-up phase's ratio is to the first BullMQ figure; a measured one runs BullMQ again first.
 */
async function sustained(label: string, area: number, { warmUp = false } = {}) {
  await drain();
  // A measured phase's ratio is to bare BullMQ run again just before it: this VM's speed drifts
  // over minutes (the first BullMQ figure has read 6,000 and 11,500 jobs/s in runs an hour apart).
  const reference = warmUp ? bare : await measureBareBullmq(backing.redis.url, probe, bareOptions);
  // No forced GC (only the MongoDB counts are read): it would reset V8's heap sizing, and the paced
  // phase after this one measured the major GC that followed ~4 s in, which no production process has.
  const before = await Promise.all([web.stats({ collectGarbage: false }), worker.stats({ collectGarbage: false })]);
  const stagesBefore = await Promise.all([web.metrics(), worker.metrics()]);
  const commandsBefore = await redisCommandCalls(probe);
  const cpuBefore = await cpu();
  const waitedBefore = await runQueue();
  const writesBefore = await Promise.all([web.pid, worker.pid].map((pid) => writeSyscalls(pid)));
  // Resets both processes' loop monitors: the reading after the phase covers it alone.
  await Promise.all([web.loop(), worker.loop()]);
  const acks: number[] = [];
  const startedAt = Date.now();
  // drain() left every earlier message answered: this phase's replies are the ones after these.
  const repliesBefore = twilio.messages.length;
  let next = 0;
  let slots = 0;
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (next < MESSAGES / PER_NUMBER && Date.now() - startedAt < PHASE_SECONDS * 1000) {
        const number = benchNumber(area, next++);
        for (let index = 0; index < PER_NUMBER; index += 1) {
          // Enough waiting to keep the worker busy, not so much that the phase ends on a long backlog:
          // the n-th message goes once the (n − MAX_OUTSTANDING)-th reply arrived. Each reply
          // releases one sender (a shared 20 ms poll released the waiting senders together, a
          // burst of webhooks that queued behind each other in the web and inflated the ack tail).
          const slot = slots++;
          if (slot >= MAX_OUTSTANDING) await twilio.waitForMessages(repliesBefore + slot - MAX_OUTSTANDING + 1, REPLY_WAIT_MS).catch(() => undefined);
          acks.push(await sender.post(number, `${label} ${number} #${index}`));
        }
      }
    }),
  );
  const sent = acks.length;
  const replies = await waitForReplies(label, sent, REPLY_WAIT_MS);
  const total = replies.length;
  const seconds = ((replies.length > 0 ? Math.max(...replies.map((reply) => reply.receivedAt)) : Date.now()) - startedAt) / 1000;
  const perSecond = total / seconds;
  const cpuAfter = await cpu();
  const loops = await Promise.all([web.loop(), worker.loop()]);
  const waitedAfter = await runQueue();
  const writesAfter = await Promise.all([web.pid, worker.pid].map((pid) => writeSyscalls(pid)));
  const busy = cpuAfter.map((after, index) => `${((100 * (after - (cpuBefore[index] ?? 0))) / seconds).toFixed(0)}%`);
  const stagesAfter = await Promise.all([web.metrics(), worker.metrics()]);
  // Per answered message (none answered: per message sent, and marked so).
  const per = Math.max(1, total);
  // The phase's Redis commands include the work it left behind: the transcript writer's and the usage fold's.
  const deferred = await deferredWorkDone();
  const commandsByName = commandDelta(commandsBefore, await redisCommandCalls(probe), per);
  let commands = 0;
  for (const count of commandsByName.values()) commands += count;
  const mongo = mongoDelta(before, await Promise.all([web.stats({ collectGarbage: false }), worker.stats({ collectGarbage: false })]));
  out(`sustained, ${label}: ${sent} messages from ${Math.ceil(sent / PER_NUMBER)} numbers (${PER_NUMBER} each, in order), ${SENDERS} senders`);
  row('answered (per-message figures below are per answered message)', `${total}/${sent}`);
  if (reference !== bare)
    row(
      'bare BullMQ just before this phase: jobs/s (median; each run)',
      `${reference.jobsPerSecond.toFixed(0)}  (${reference.runs.map((run) => run.toFixed(0)).join(', ')})`,
    );
  row(
    'messages/s (first webhook → last reply at Twilio)',
    `${perSecond.toFixed(1)}  (${((100 * perSecond) / reference.jobsPerSecond).toFixed(1)}% of bare BullMQ)`,
  );
  row('webhook ack p50 / p99 (ms)', ms(acks));
  row(
    'Redis commands per message (web + worker + BullMQ, with the writes it left behind)',
    `${commands.toFixed(1)}  (BullMQ alone ${bare.commandsPerJob.toFixed(1)}, difference ${(commands - bare.commandsPerJob).toFixed(1)})`,
  );
  row(
    '  by command, minus BullMQ per job (largest differences)',
    [...new Set([...commandsByName.keys(), ...bare.commandsByName.keys()])]
      .map((name) => [name, (commandsByName.get(name) ?? 0) - (bare.commandsByName.get(name) ?? 0)] as const)
      .filter(([, difference]) => Math.abs(difference) >= 0.05)
      .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
      .slice(0, 16)
      .map(([name, difference]) => `${name} ${difference > 0 ? '+' : ''}${difference.toFixed(2)}`)
      .join(', ') + (deferred ? '' : ' (the outbox or usage list was not empty 20 s after the phase: some deferred work is not counted)'),
  );
  row('MongoDB commands per message (both processes)', (sumCommands(mongo) / per).toFixed(1));
  row('CPU of one core: FerretDB / Redis / web / worker / bench', busy.join(' / '));
  row(
    'CPU ms per answered message: FerretDB / Redis / web / worker / bench',
    cpuAfter.map((after, index) => ((1000 * (after - (cpuBefore[index] ?? 0))) / per).toFixed(2)).join(' / '),
  );
  row(
    'write system calls per answered message: web / worker',
    writesAfter.map((after, index) => ((after - (writesBefore[index] ?? 0)) / per).toFixed(1)).join(' / '),
  );
  row(
    '  by command',
    Object.entries(mongo)
      .sort((a, b) => b[1] - a[1])
      .map(([name, count]) => `${name} ${(count / per).toFixed(2)}`)
      .join(', '),
  );
  // Where a message's time goes, as the processes' own histograms saw it (means over this phase).
  out(`  where the time goes (the processes' histograms over this phase: mean ms, samples per answered message)`);
  const stage = (name: string, which: 0 | 1, histogram: string, labels: string[] = []) => {
    const delta = histogramDelta(histogramTotals(stagesBefore[which]), histogramTotals(stagesAfter[which]), histogram, labels);
    row(`  ${name}`, `${fixed(delta.meanMs, 1)} ms  ×${(delta.count / per).toFixed(2)}`);
  };
  stage('webhook ack, web (server side; client side above)', 0, 'webhook_ack_seconds', ['channel="whatsapp"']);
  row(
    '    p50 / p99 (ms, histogram bucket)',
    [50, 99].map((p) => histogramPercentile(stagesBefore[0], stagesAfter[0], 'webhook_ack_seconds', p, ['channel="whatsapp"'])).join(' / '),
  );
  loopRow('web', loops[0]);
  loopRow('worker', loops[1]);
  runQueueRow(waitedBefore, waitedAfter, seconds);
  stage('queue wait, turns queue (worker)', 1, 'queue_wait_seconds', ['queue="turns"']);
  stage('turn, orchestrator incl. model calls (worker)', 1, 'turn_duration_seconds');
  stage('  model call: judge (instant model)', 1, 'model_call_duration_seconds', ['purpose="judge"']);
  stage('  model call: reply (instant model)', 1, 'model_call_duration_seconds', ['purpose="reply"']);
  stage('send of one reply part (worker → fake Twilio)', 1, 'send_duration_seconds');
  // Behind the conversation: does the transcript writer keep up with MongoDB?
  const sample = (text: string, name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const written = sample(stagesAfter[1], 'transcript_records_written_total') - sample(stagesBefore[1], 'transcript_records_written_total');
  const backlog = Math.max(...stagesAfter.map((text) => sample(text, 'transcript_outbox_backlog')));
  row('transcript records written to MongoDB in the phase / outbox backlog at its end', `${written} / ${backlog}`);
  return { perSecond, bareJobsPerSecond: reference.jobsPerSecond, acks, commands, mongoPerMessage: sumCommands(mongo) / per, written, backlog };
}

// Warm-up, which is also the template conversation the history is copied from.
for (let turn = 0; turn < 10; turn += 1) {
  await sender.post(TEMPLATE_NUMBER, `history turn ${turn}: what are your opening hours?`, templateSid(turn));
  await twilio.waitForMessages(turn + 1, 60_000);
}

// The processes' code is optimised by the JIT only after some thousand turns: the first phase
// measured cold code (the second ran ~3× faster), and the worker's CPU per message still fell
// by a third over the next 6,000 messages (1.55 → 1.30 → 1.08 ms). Warm-up phases of their own
// (BENCH_WARMUP_PHASES, 3 × 3,000 messages), printed like the others, leave every measured phase
// on processes in their steady state, as a service that has run for a while is.
const WARMUP_PHASES = Number(env.BENCH_WARMUP_PHASES ?? 3);
for (let round = 1; round <= WARMUP_PHASES; round += 1)
  await sustained(round === 1 ? 'warm-up' : `warm-up ${round}`, round === 1 ? 200 : 210 + round, { warmUp: true });

// 2 — sustained throughput, empty store (only the warm-ups' messages stored; their count is printed).
await drain();
const warmUpMessages = await countStoredMessages(backing.mongoUri);
const empty = await sustained(`empty store (only the warm-ups' ${warmUpMessages} messages stored)`, 201);

// 3 — paced 100 msgs/s: overhead = webhook sent → reply at the fake Twilio API (model excluded: it answers at once).
await drain();
const pacedCount = PACED_RATE * PACED_SECONDS;
const pacedAcks: number[] = [];
const pacedSids: string[] = [];
// The CPU-slowdown probe's thread starts well before the first message: starting a thread (its own
// V8 isolate) took both cores for tens of ms, and the first messages of the phase were its slowest.
const cpuProbe = startCpuProbe();
await sleep(500);
// Resets both processes' loop monitors: the next reading covers this phase only.
await Promise.all([web.loop(), worker.loop()]);
const pacedMetricsBefore = await Promise.all([web.metrics(), worker.metrics()]);
// Redis commands slower than 1 ms during the phase (Redis is single-threaded: one blocks every client).
await probe.config('SET', 'slowlog-log-slower-than', '1000');
await probe.slowlog('RESET');
// Redis blocked outside a command (AOF write/fsync, expiry, fork) over 2 ms: its latency monitor.
await probe.config('SET', 'latency-monitor-threshold', '2');
await probe.call('LATENCY', 'RESET');
const stallsBefore = await machineStallMs();
const waitedBefore = await runQueue();
const cpuPacedBefore = await Promise.all([cpu(), machineBusySeconds()]);
const benchLoop = monitorEventLoopDelay({ resolution: 5 });
benchLoop.enable();
const benchGc: number[] = [];
const benchGcObserver = new PerformanceObserver((list) => void benchGc.push(...list.getEntries().map((entry) => entry.duration)));
benchGcObserver.observe({ entryTypes: ['gc'] });
const pacedStart = performance.now();
const pacedStartEpoch = Date.now();
const posting: Promise<void>[] = [];
for (let index = 0; index < pacedCount; index += 1) {
  await sleep(pacedStart + (index * 1000) / PACED_RATE - performance.now());
  const sid = newTwilioSid();
  pacedSids.push(sid);
  posting.push(sender.post(benchNumber(301, index), `paced ${index}`, sid).then((ack) => void pacedAcks.push(ack)));
}
await Promise.all(posting);
const pacedReplies = await waitForReplies('paced ', pacedCount, REPLY_WAIT_MS);
benchLoop.disable();
benchGcObserver.disconnect();
const loops = await Promise.all([web.loop(), worker.loop()]);
const pacedMetricsAfter = await Promise.all([web.metrics(), worker.metrics()]);
const waitedAfter = await runQueue();
const cpuPacedAfter = await Promise.all([cpu(), machineBusySeconds()]);
const slow = (await probe.slowlog('GET', 1000)) as [number, number, number, string[]][];
const latencyEvents = await redisLatencyEvents(probe);
const stallsAfter = await machineStallMs();
const probedAll = await cpuProbe.stop();
const probed = { ...probedAll, episodes: probedAll.episodes.filter(({ to }) => to >= pacedStartEpoch) };
// A message still unanswered when the phase stops waiting counts as infinitely slow.
const overheads = [
  ...pacedReplies.map((reply) => reply.receivedAt - (sender.sentAt.get(reply.body.replace(/^ok /, '')) ?? reply.receivedAt)),
  ...Array.from({ length: pacedCount - pacedReplies.length }, () => Infinity),
];
out(`paced: ${pacedCount} messages at ${PACED_RATE}/s, one number each (first sent at ${sender.sentAt.get('paced 0')} ms epoch)`);
row('answered', `${pacedReplies.length}/${pacedCount}`);
row('webhook ack p50 / p99 (ms)', ms(pacedAcks));
row('pipeline overhead p50 / p99 (ms, webhook → reply at Twilio)', ms(overheads));
// Where each message's time went, from its BullMQ job's own timestamps (Date.now() of the web
// adding it, of the worker moving it to active) and the reply's arrival at the fake Twilio API.
/** Overheads of the paced messages no CPU slowdown of the host overlapped: the code's own figure on this VM. */
let outsideSlowdowns: number[];
{
  const replyAt = new Map(pacedReplies.map((reply) => [reply.body.replace(/^ok /, ''), reply.receivedAt]));
  const jobs = await Promise.all(
    pacedSids.map((sid, index) =>
      probe.hmget(
        `${QUEUE_PREFIX}:${TURN_QUEUE_NAME}:${`${conversationKeyFor(benchNumber(301, index))}|${sid}`.replace(/:/g, '_')}`,
        'timestamp',
        'processedOn',
      ),
    ),
  );
  const toJob: number[] = [];
  const queueWait: number[] = [];
  const turnAndSend: number[] = [];
  const slowestMessages: { at: number; total: number; parts: number[] }[] = [];
  const phaseStart = sender.sentAt.get('paced 0') ?? 0;
  jobs.forEach(([created, processed], index) => {
    const sentAt = sender.sentAt.get(`paced ${index}`);
    const replied = replyAt.get(`paced ${index}`);
    if (sentAt === undefined || created === null || processed === null || replied === undefined) return;
    toJob.push(Number(created) - sentAt);
    queueWait.push(Number(processed) - Number(created));
    turnAndSend.push(replied - Number(processed));
    slowestMessages.push({
      at: sentAt - phaseStart,
      total: replied - sentAt,
      parts: [Number(created) - sentAt, Number(processed) - Number(created), replied - Number(processed)],
    });
  });
  // BENCH_GC_LOG=<path>: every paced message (sent at, epoch ms; total = to job + queue + turn/send) to <path>.paced, to line up with the GC logs.
  if (env.BENCH_GC_LOG)
    await appendFile(`${env.BENCH_GC_LOG}.paced`, slowestMessages.map(({ at, total, parts }) => `${phaseStart + at} ${total} ${parts.join(' ')}\n`).join(''));
  out(`  where a paced message's time goes (p50 / p99 ms, ${toJob.length} messages with a job)`);
  row('  webhook sent → job added (web: HTTP, signature, inbox)', ms(toJob));
  row('  job added → worker moved it to active (queue wait)', ms(queueWait));
  row('  active → reply at Twilio (turn, send)', ms(turnAndSend));
  // When the slowest were sent: stalls at a fixed period point at a periodic task.
  row(
    '  slowest 8: sent at +ms (total = to job + queue + turn/send)',
    slowestMessages
      .sort((a, b) => b.total - a.total)
      .slice(0, 8)
      .sort((a, b) => a.at - b.at)
      .map(({ at, total, parts }) => `+${at} ${total}=${parts.join('+')}`)
      .join(', '),
  );
  const bucketRow = (name: string, which: 0 | 1, histogram: string, labels: string[] = []) =>
    row(
      `  ${name} (histogram bucket)`,
      `${histogramPercentile(pacedMetricsBefore[which] ?? '', pacedMetricsAfter[which] ?? '', histogram, 50, labels)} / ${histogramPercentile(pacedMetricsBefore[which] ?? '', pacedMetricsAfter[which] ?? '', histogram, 99, labels)}`,
    );
  bucketRow('webhook ack, web (server side)', 0, 'webhook_ack_seconds', ['channel="whatsapp"']);
  bucketRow('turn, orchestrator incl. model calls', 1, 'turn_duration_seconds');
  bucketRow('  model call: judge', 1, 'model_call_duration_seconds', ['purpose="judge"']);
  bucketRow('  model call: reply', 1, 'model_call_duration_seconds', ['purpose="reply"']);
  bucketRow('send of one reply part', 1, 'send_duration_seconds');
  loopRow('web', loops[0]);
  loopRow('worker', loops[1]);
  const slowest = new Map<string, { count: number; max: number }>();
  for (const [, , micros, command] of slow) {
    const name = command.slice(0, 3).join(' ').slice(0, 60);
    const entry = slowest.get(name) ?? { count: 0, max: 0 };
    slowest.set(name, { count: entry.count + 1, max: Math.max(entry.max, micros / 1000) });
  }
  const pacedSeconds = (performance.now() - pacedStart) / 1000;
  const ours = cpuPacedAfter[0].map((after, index) => after - (cpuPacedBefore[0][index] ?? 0));
  const percent = (seconds: number) => `${((100 * seconds) / pacedSeconds).toFixed(0)}%`;
  // Whether the cores were free: what this stack used against what the whole machine did (other processes included).
  row(
    '  CPU of one core: FerretDB / Redis / web / worker / bench; whole machine (of 200%)',
    `${ours.map(percent).join(' / ')}; ${percent(cpuPacedAfter[1] - cpuPacedBefore[1])}`,
  );
  // The same code's CPU a message at this pace against the sustained phase's: on a VM whose cores idle
  // between messages, every function runs slower (cold caches, a woken vCPU), not only the waits.
  row(
    '  CPU ms per message: FerretDB / Redis / web / worker / bench (sustained phase above: CPU ms per answered message)',
    ours.map((seconds) => ((1000 * seconds) / Math.max(1, pacedReplies.length)).toFixed(2)).join(' / '),
  );
  runQueueRow(waitedBefore, waitedAfter, pacedSeconds);
  row(
    '  Redis commands over 1 ms (count, max ms)',
    [...slowest]
      .sort((a, b) => b[1].max - a[1].max)
      .slice(0, 5)
      .map(([name, { count, max }]) => `${name} ×${count} ${max.toFixed(1)}`)
      .join('; ') || 'none',
  );
  row(
    '  Redis latency monitor over 2 ms (event: seconds with a spike, max ms)',
    latencyEvents.map(({ event, spikes, maxMs }) => `${event}: ${spikes}, ${maxMs}`).join('; ') || 'none',
  );
  row(
    '  machine stalls (ms per s): some task waiting for a core / for the disk; hypervisor steal',
    [stallsAfter.cpu - stallsBefore.cpu, stallsAfter.io - stallsBefore.io, stallsAfter.steal - stallsBefore.steal]
      .map((value) => (value / pacedSeconds).toFixed(0))
      .join(' / '),
  );
  if (env.BENCH_GC_LOG)
    await appendFile(`${env.BENCH_GC_LOG}.cpu`, probed.episodes.map(({ from, to, worst }) => `${from.toFixed(0)} ${to} ${worst.toFixed(1)}\n`).join(''));
  // Messages over 25 ms whose time overlapped a CPU slowdown: those stalls are the machine's.
  const slowSent = slowestMessages.filter(({ total }) => total > 25);
  const duringAny = ({ at, total }: { at: number; total: number }) =>
    probed.episodes.some(({ from, to }) => phaseStart + at <= to && phaseStart + at + total >= from);
  const duringSlowdown = slowSent.filter(duringAny);
  outsideSlowdowns = slowestMessages.filter((message) => !duringAny(message)).map(({ total }) => total);
  row(
    '  CPU slowdowns (a fixed computation ≥ 3× its usual time on a core): count, worst; messages over 25 ms during one',
    `${probed.episodes.length}, ${Math.max(0, ...probed.episodes.map(({ worst }) => worst)).toFixed(0)}× (usual ${probed.medianMs.toFixed(2)} ms); ${duringSlowdown.length}/${slowSent.length}`,
  );
  row(
    '  pipeline overhead p50 / p99 (ms) of the messages no CPU slowdown overlapped',
    `${ms(outsideSlowdowns)}  (${outsideSlowdowns.length} of ${slowestMessages.length})`,
  );
  row(
    '  event loop bench (senders, fake Twilio): delay p50 / p99 / max; GC pauses count, total, max',
    `${(benchLoop.percentile(50) / 1e6).toFixed(1)} / ${(benchLoop.percentile(99) / 1e6).toFixed(1)} / ${(benchLoop.max / 1e6).toFixed(1)}; ${benchGc.length}, ${benchGc.reduce((sum, pause) => sum + pause, 0).toFixed(0)}, ${Math.max(0, ...benchGc).toFixed(1)} ms`,
  );
}

// 4 — the same throughput phase with ≥ 50k stored messages. Seeding has a deadline
// (BENCH_SEED_SECONDS): a seed that never finishes is reported, and the other phases still run.
await drain();
const SEED_SECONDS = Number(env.BENCH_SEED_SECONDS ?? 600);
const seeded = await Promise.race([seedHistory(backing.mongoUri, probe, STORED_MESSAGES), sleep(SEED_SECONDS * 1000).then(() => undefined)]);
let drop: number | undefined;
let storedMessages = 0;
/** The transcript writer during the stored-data phase: a hot path that never waits on MongoDB hides a writer that fell behind. */
let storedWriter = '';
if (seeded) {
  out(`stored history: ${seeded.conversations} conversations copied in ${seeded.seconds.toFixed(0)} s`);
  row(
    'MongoDB documents',
    Object.entries(seeded.documents)
      .map(([name, count]) => `${name} ${count}`)
      .join(', '),
  );
  row('Redis keys copied', String(seeded.redisKeys));
  storedMessages = seeded.documents.messages ?? 0;
  const stored = await sustained(`${Math.round((seeded.documents.messages ?? STORED_MESSAGES) / 1000)}k stored messages`, 202);
  drop = (100 * (stored.perSecond - empty.perSecond)) / empty.perSecond;
  storedWriter = `; transcript writer meanwhile: ${stored.written} records written, outbox backlog ${stored.backlog}`;
  row('throughput change from the empty store', `${drop >= 0 ? '+' : ''}${drop.toFixed(1)}%`);
} else {
  out(`stored history: seeding ${STORED_MESSAGES} messages did not finish within ${SEED_SECONDS} s — the stored-data phase is skipped`);
  // The seed still holds FerretDB (a worker could not even start): the phases that need it are skipped too.
  out('  killed-worker and MongoDB-paused phases skipped: FerretDB is still busy with the seed');
}

// 5 — a worker killed mid-turn: its conversation answered by a new worker, how long after the kill.
let killed: number | undefined;
if (env.BENCH_SKIP_KILL !== '1' && seeded) {
  // A killed process writes no CPU profile: the profiled worker stops cleanly first.
  if (cpuProfileDirectory) {
    await worker.stop();
    worker = await spawnServiceProcess('worker', childEnv, { profile: false });
  }
  await drain();
  const number = benchNumber(401, 0);
  await sender.post(number, 'killed worker #slow');
  out('killed worker (SIGKILL mid-turn, a new worker started at once)');
  const started = await worker.waitFor('model-called killed worker #slow', 60_000).then(
    () => true,
    () => false,
  );
  if (started) {
    await worker.kill();
    const killedAt = Date.now();
    worker = await spawnServiceProcess('worker', childEnv, { profile: false });
    const [reply] = await waitForReplies('killed worker', 1, 90_000);
    killed = reply ? (reply.receivedAt - killedAt) / 1000 : Infinity;
    row('conversation answered after the kill (s)', Number.isFinite(killed) ? killed.toFixed(1) : 'not within 90 s');
  } else row('conversation answered after the kill (s)', 'not measured: the turn did not start within 60 s');
}

// 6 — FerretDB paused: are customers answered while it is?
let paused: { answered: number; sent: number } | undefined;
if (backing.ferret && seeded) {
  await drain();
  const sent = 20;
  backing.ferret.pause();
  const pausedAt = Date.now();
  const acks = await Promise.allSettled(
    Array.from({ length: sent }, async (_, index) => {
      await sleep(index * 100);
      return sender.post(benchNumber(501, index), `paused ${index}`, undefined, 5_000);
    }),
  );
  await sleep(Math.max(0, pausedAt + 6_000 - Date.now()));
  const answered = (await waitForReplies('paused ', sent, 0)).length;
  backing.ferret.resume();
  paused = { answered, sent };
  const after = await waitForReplies('paused ', sent, REPLY_WAIT_MS);
  out(`MongoDB paused (SIGSTOP) 6 s while ${sent} messages arrive`);
  row('webhooks acknowledged while paused', `${acks.filter((ack) => ack.status === 'fulfilled').length}/${sent}`);
  row('answered while paused', `${answered}/${sent}`);
  row('answered after it resumed', `${after.length}/${sent}`);
}

const webStats = await web.stats();
const workerStats = await worker.stats();
row('RSS web / worker at the end (MB)', `${(webStats.rss / 2 ** 20).toFixed(0)} / ${(workerStats.rss / 2 ** 20).toFixed(0)}`);

const mark = (ok: boolean) => (ok ? '✓' : '✗');
const p50 = percentile(overheads, 50);
const p99 = percentile(overheads, 99);
const ackP99 = percentile(empty.acks, 99);
const redisDifference = empty.commands - bare.commandsPerJob;
const table: [string, string, string][] = [
  [
    'sustained messages/s, embedded default',
    `${empty.perSecond.toFixed(1)} = ${((100 * empty.perSecond) / empty.bareJobsPerSecond).toFixed(1)}% of ${empty.bareJobsPerSecond.toFixed(0)} (BullMQ just before the phase) ${mark(empty.perSecond >= 300 && empty.perSecond >= 0.08 * empty.bareJobsPerSecond)}`,
    '≥ 300, and ≥ 8% of the same-run BullMQ figure',
  ],
  [
    'throughput drop from empty to ≥ 50k stored messages',
    drop === undefined
      ? 'not measured: seeding timed out ✗'
      : `${drop.toFixed(1)}% from ${warmUpMessages} to ${storedMessages} stored messages ${mark(drop >= -10 && storedMessages >= 50_000)}${storedWriter}`,
    '≤ 10%',
  ],
  [
    'pipeline overhead p50 / p99 at 100 msgs/s (model excluded)',
    `${fixed(p50, 0)} / ${fixed(p99, 0)} ms ${mark(p50 <= 5 && p99 <= 25)}; the ${outsideSlowdowns.length} messages no CPU slowdown of the host overlapped: ${fixed(percentile(outsideSlowdowns, 50), 0)} / ${fixed(percentile(outsideSlowdowns, 99), 0)} ms`,
    '≤ 5 / ≤ 25 ms',
  ],
  ['webhook ack p99 during the sustained phase', `${ackP99.toFixed(0)} ms ${mark(ackP99 <= 10)}`, '≤ 10 ms'],
  [
    'Redis commands per message, minus BullMQ per job',
    `${empty.commands.toFixed(1)} − ${bare.commandsPerJob.toFixed(1)} = ${redisDifference.toFixed(1)} ${mark(redisDifference <= 15)}`,
    '≤ 15',
  ],
  [
    'synchronous MongoDB round trips per message',
    paused === undefined
      ? `n/a (external MongoDB); ${empty.mongoPerMessage.toFixed(1)} in total`
      : paused.answered === paused.sent
        ? `0 (${paused.answered}/${paused.sent} answered with MongoDB paused; ${empty.mongoPerMessage.toFixed(1)} async) ✓`
        : `> 0: ${paused.answered}/${paused.sent} answered with MongoDB paused; ${empty.mongoPerMessage.toFixed(1)} in total ✗`,
    '0',
  ],
  ['killed worker → its conversation answered', killed === undefined ? 'not measured' : `${fixed(killed, 1)} s ${mark(killed <= 10)}`, '≤ 10 s'],
  ['RSS growth over 100k turns', 'npm run bench:soak', '≤ 10%'],
];
out('\nIssue 11 targets');
out(`| figure | measured | target |\n|---|---|---|`);
for (const [figure, measured, target] of table) out(`| ${figure} | ${measured} | ${target} |`);

await web.stop();
await worker.stop();

// 7 — Redis commands a message by feature: the features off, each on alone, all on, each on a
// service of its own (feature-budget.ts); BENCH_SKIP_FEATURES=1 skips it.
if (env.BENCH_SKIP_FEATURES !== '1') {
  out('');
  const reference = async () => (await measureBareBullmq(backing.redis.url, probe, bareOptions)).jobsPerSecond;
  const figures = await measureFeatureBudget(backing, {
    messages: Number(env.BENCH_FEATURE_MESSAGES ?? 1500),
    bareCommandsPerJob: bare.commandsPerJob,
    out,
    reference,
  });
  const off = figures[0];
  const all = figures.at(-1);
  if (off && all) {
    const allRatio = all.bareJobsPerSecond ? (100 * all.perSecond) / all.bareJobsPerSecond : NaN;
    out('\nRedis budget targets');
    out(`| figure | measured | target |\n|---|---|---|`);
    out(
      `| Redis commands a message, features off, minus BullMQ per job | ${(off.commands - bare.commandsPerJob).toFixed(1)} ${mark(off.commands - bare.commandsPerJob <= 9)} | ≤ 9 |`,
    );
    out(
      `| Redis commands a message, every feature on, minus BullMQ per job | ${(all.commands - bare.commandsPerJob).toFixed(1)} ${mark(all.commands - bare.commandsPerJob <= 12)} | ≤ 12 |`,
    );
    out(`| messages/s, every feature on, of bare BullMQ just before | ${allRatio.toFixed(1)}% ${mark(allRatio >= 8)} | ≥ 8% |`);
  }
}
await backing.stop();
if (cpuProfileDirectory) {
  out(`\nCPU profiles in ${cpuProfileDirectory} (self time, top functions):`);
  for (const line of await summarizeProfiles(cpuProfileDirectory)) out(line);
}
process.exit(0);
