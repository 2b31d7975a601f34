/**
 * `npm run bench:reports`: the reports at real volume, on a Redis and a FerretDB of its own.
 *   1. The roll-up's cost per transcript record: 100,000 conversations and 1,000,000 messages
 *      (BENCH_REPORTS_MESSAGES) over 30 days, 1 in 20 conversations handed off and answered by a
 *      teammate, counted as the transcript writer's hook counts them (batches of 200 records:
 *      one script each, each record marked by its outbox entry, two records an entry, the marks
 *      released once the batch is done as the writer does once its entries left the outbox) —
 *      client round trips, Redis commands inside the scripts (INFO commandstats), time, Redis's
 *      memory; then the flush's MongoDB commands.
 *   2. The page's data: the summary for 30 days, all channels, with the previous 30 days to compare, from those roll-ups (20 runs;
 *      median and worst; the target is ≤ 1 s), its distinct conversations (HyperLogLogs) beside the true count, and one
 *      widget site's summary (half the web's conversations are each of two sites'; every reply, hand-off and model use is one of two roles').
 *   3. What the page reads from the hand-offs beside it, over the same volume's hand-offs in
 *      MongoDB (1 in 20 conversations handed off in each 30 days; 50 not ended, half of them
 *      taken and answered): the hand-offs waiting now, and the whole page's data as the router
 *      reads it (the summary and the hand-offs waiting now in parallel; 5 runs, median; the same target).
 * Prints a table; exits 1 when the summary's median misses the target.
 */
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createReportsFeature } from '../../src/reports/index.js';
import type { RollupEvent } from '../../src/reports/rollup-events.js';
import { parseQuery, readSummary } from '../../src/reports/summary.js';
import { createWaitingHandoffs } from '../../src/reports/waiting-handoffs.js';
import { startMongo, startRedis } from '../support/services.js';

const MESSAGES = Number(process.env.BENCH_REPORTS_MESSAGES ?? 1_000_000);
const CONVERSATIONS = Math.max(1, Math.round(MESSAGES / 10));
const DAYS = 30;
const RECORDS_PER_BATCH = 200;
const SUMMARY_RUNS = 20;
const TARGET_MS = 1_000;
const CHANNELS = ['whatsapp', 'web'];
const today = new Date().toISOString().slice(0, 10);
const dayAt = (index: number) => new Date(Date.parse(`${today}T00:00:00Z`) - (DAYS - 1 - index) * 86_400_000);

const [redisHandle, mongoHandle] = await Promise.all([startRedis(), startMongo()]);
const redis = new Redis(redisHandle.url);
const connection = mongoose.createConnection(`${mongoHandle.uri.replace(/\/$/, '')}/reports_bench`, { monitorCommands: true });
await connection.asPromise();
const mongoCommands: string[] = [];
connection.getClient().on('commandStarted', (event) => mongoCommands.push(event.commandName));
const logger = createLogger({ level: 'warn', sink: (line) => process.stderr.write(`${line}\n`) });
const reports = createReportsFeature({
  connection,
  redis,
  logger,
  metrics: createMetrics(),
  config: { adminToken: undefined, publicBaseUrl: 'http://127.0.0.1', channels: CHANNELS, prices: { bench: { inputPerMTok: 0.5, outputPerMTok: 1.5 } } },
});

/** One conversation's records: ~10 messages on its day, a hand-off and a teammate's reply for 1 in 20. */
function conversationEvents(index: number): RollupEvent[] {
  const channel = CHANNELS[Math.floor(index / DAYS) % 2] ?? 'whatsapp';
  // A web conversation is one of two widget sites' (its events count in the site's view too).
  const site = channel === 'web' ? `site-${index % 2}` : undefined;
  const conversation = channel === 'web' ? `web:${site}:visitor-${index}:chat` : `${channel}:bench-${index}`;
  const bySite = site ? { site } : {};
  // The role that answers it (each reply, its model use, a hand-off: the role's view too).
  const role = index % 3 === 0 ? 'support' : 'sales';
  const start = dayAt(index % DAYS).getTime() + (index % 1000) * 60_000;
  const day = new Date(start).toISOString().slice(0, 10);
  const events: RollupEvent[] = [];
  for (let n = 0; n < 10; n += 1) {
    const inbound = n % 2 === 0;
    const at = start + n * 30_000;
    events.push(
      inbound
        ? { id: `m:in:${conversation}:${n}`, day, channel, ...bySite, kind: 'in', conversation }
        : {
            id: `m:out:${conversation}:${n}`,
            day,
            channel,
            ...bySite,
            role,
            kind: 'out',
            conversation,
            teammate: false,
            at,
            message: `out:${conversation}:${n}`,
          },
    );
    // Each message sent has its delivery record (the channel took it).
    if (!inbound) events.push({ id: '', day, channel, kind: 'delivered', message: `out:${conversation}:${n}` });
  }
  if (index % 20 === 0) {
    events.push({
      id: `h:${conversation}`,
      day,
      channel,
      ...bySite,
      kind: 'handoff',
      conversation,
      team: 'support',
      role: 'support',
      at: start + 400_000,
      handoff: `ho:${conversation}`,
    });
    events.push({
      id: `m:tm:${conversation}`,
      day,
      channel,
      ...bySite,
      kind: 'out',
      conversation,
      teammate: true,
      at: start + 400_000 + 240_000,
      message: `tm:${conversation}`,
    });
    events.push({ id: '', day, channel, kind: 'delivered', message: `tm:${conversation}` });
    // Handed back after 10 to 130 minutes.
    events.push({ id: `r:ho:${conversation}`, day, channel, ...bySite, kind: 'resolved', seconds: 600 + (index % 120) * 60 });
  }
  events.push({ id: '', day, channel, role, kind: 'usage', model: 'bench', calls: 2, inputTokens: 1200, outputTokens: 200 });
  return events;
}

const commandstats = async () => {
  const text = await redis.info('commandstats');
  return Object.fromEntries([...text.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((match) => [match[1] ?? '', Number(match[2])]));
};
const before = await commandstats();
let records = 0;
let scripts = 0;
const started = performance.now();
let pending: RollupEvent[] = [];
let marks: string[] = [];
/** An outbox entry's id (a stream id: its time in ms, a sequence): two records an entry. */
const entryTime = Date.now();
let recordNumber = 0;
const countBatch = async () => {
  await reports.store.count(pending, marks);
  await reports.store.release([...new Set(marks.filter(Boolean))]);
  scripts += 2;
  pending = [];
  marks = [];
};
for (let index = 0; index < CONVERSATIONS; index += 1) {
  for (const event of conversationEvents(index)) {
    pending.push(event);
    // Model use is counted from the usage store's fold, not from the outbox: no mark.
    marks.push(event.kind === 'usage' ? '' : `${entryTime}-${Math.floor(recordNumber++ / 2)}`);
    if (event.kind === 'in' || event.kind === 'out') records += 1;
    if (pending.length >= RECORDS_PER_BATCH) await countBatch();
  }
}
if (pending.length > 0) await countBatch();
const countMs = performance.now() - started;
const after = await commandstats();
const insideScripts = Object.entries(after)
  .filter(([name]) => !['evalsha', 'eval', 'info', 'script'].includes(name))
  .reduce((sum, [name, calls]) => sum + calls - (before[name] ?? 0), 0);
const memory = /used_memory:(\d+)/.exec(await redis.info('memory'))?.[1];
const flushStarted = performance.now();
await reports.store.flush();
const flushMs = performance.now() - flushStarted;
const flushCommands = mongoCommands.length;

const parsed = parseQuery({}, CHANNELS, today);
if ('error' in parsed) throw new Error(parsed.error);
const timings: number[] = [];
let summary: Awaited<ReturnType<typeof readSummary>> | undefined;
for (let run = 0; run < SUMMARY_RUNS; run += 1) {
  const runStarted = performance.now();
  await reports.store.flush();
  summary = await readSummary(reports.store, parsed.query, CHANNELS, today, { bench: { inputPerMTok: 0.5, outputPerMTok: 1.5 } });
  timings.push(performance.now() - runStarted);
}
timings.sort((a, b) => a - b);
const median = timings[Math.floor(timings.length / 2)] ?? 0;
// One widget site's figures (its view of the web channel), the same 30 days.
const siteParsed = parseQuery({ site: 'site-0' }, CHANNELS, today, await reports.store.sites());
if ('error' in siteParsed) throw new Error(siteParsed.error);
const siteTimings: number[] = [];
let siteSummary: Awaited<ReturnType<typeof readSummary>> | undefined;
for (let run = 0; run < 5; run += 1) {
  const runStarted = performance.now();
  siteSummary = await readSummary(reports.store, siteParsed.query, CHANNELS, today);
  siteTimings.push(performance.now() - runStarted);
}

// 3. The hand-off reads over the hand-offs MongoDB holds (this period's and the previous one's), 50 not ended.
const insertStarted = performance.now();
const handoffDocs = [];
const pointerDocs = [];
for (let index = 0; index < CONVERSATIONS; index += 20) {
  const channel = CHANNELS[Math.floor(index / DAYS) % 2] ?? 'whatsapp';
  const conversationId = `${channel}:bench-${index}`;
  const waiting = index >= CONVERSATIONS - 50 * 20;
  for (const period of [0, DAYS]) {
    const createdAt = new Date(dayAt(index % DAYS).getTime() - period * 86_400_000 + 400_000);
    const open = waiting && period === 0;
    // Of those not ended, every other one was taken and answered (its wait no longer in the roll-up).
    handoffDocs.push({
      _id: `ho-${period}-${index}`,
      team: 'support',
      status: open ? (index % 40 === 0 ? 'taken' : 'open') : 'closed',
      reason: 'bench',
      channel,
      conversationId,
      roleId: 'support',
      customer: { address: conversationId },
      createdAt,
      updatedAt: createdAt,
      ...(open ? {} : { endedAt: new Date(createdAt.getTime() + (5 + (index % 120)) * 60_000) }),
    });
    if (open) pointerDocs.push({ _id: `support|${conversationId}`, handoffId: `ho-0-${index}`, openedAt: createdAt });
  }
}
await connection.collection('handoffs').insertMany(handoffDocs as never[], { ordered: false });
await connection.collection('openhandoffs').insertMany(pointerDocs as never[], { ordered: false });
const insertMs = performance.now() - insertStarted;
const waitingSource = createWaitingHandoffs(
  connection,
  (id) => `https://bench.example/${id}`,
  () => reports.store.waitingHandoffs(),
);
const handoffTimings: number[] = [];
const pageTimings: number[] = [];
let waitingCount = 0;
let pageSummary: Awaited<ReturnType<typeof readSummary>> | undefined;
for (let run = 0; run < 5; run += 1) {
  let readStarted = performance.now();
  waitingCount = (await waitingSource.read(parsed.query)).handoffs.length;
  handoffTimings.push(performance.now() - readStarted);
  readStarted = performance.now();
  await reports.store.flush();
  [pageSummary] = await Promise.all([readSummary(reports.store, parsed.query, CHANNELS, today), waitingSource.read(parsed.query)]);
  pageTimings.push(performance.now() - readStarted);
}
const medianOf = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;
const pageMedian = medianOf(pageTimings);

const rows: [string, string][] = [
  ['conversations / messages counted', `${summary?.totals.conversations} / ${(summary?.totals.messagesIn ?? 0) + (summary?.totals.messagesOut ?? 0)}`],
  ['roll-up: client round trips per record', (scripts / records).toFixed(4)],
  ['roll-up: Redis commands inside scripts per record', (insideScripts / records).toFixed(2)],
  ['roll-up: time per record', `${((1000 * countMs) / records).toFixed(1)} µs`],
  ['roll-up: Redis memory (day sets, HyperLogLogs, totals)', `${(Number(memory ?? 0) / 2 ** 20).toFixed(1)} MiB`],
  [
    'distinct conversations / resolved by the assistant',
    `${summary?.totals.distinctConversations} / ${summary?.totals.resolvedByAssistant} (of ${CONVERSATIONS} / ${CONVERSATIONS - Math.ceil(CONVERSATIONS / 20)})`,
  ],
  ['flush: MongoDB commands (all days)', `${flushCommands} in ${flushMs.toFixed(0)} ms`],
  ['summary, 30 days, all channels: median / worst', `${median.toFixed(1)} / ${(timings.at(-1) ?? 0).toFixed(1)} ms (target ≤ ${TARGET_MS} ms)`],
  ['one site (site-0), 30 days: conversations, median', `${siteSummary?.totals.conversations} in ${[...siteTimings].sort((a, b) => a - b)[2]?.toFixed(1)} ms`],
  ['MongoDB: hand-offs stored (inserted in)', `${handoffDocs.length.toLocaleString('en')} (${(insertMs / 1000).toFixed(1)} s)`],
  [
    'hand-offs waiting now / resolved (median)',
    `${waitingCount} / ${pageSummary?.totals.resolution.ended} (${pageSummary?.totals.resolution.medianSeconds} s)`,
  ],
  ['hand-offs waiting now, read: median', `${medianOf(handoffTimings).toFixed(1)} ms`],
  ["the page's data (summary + waiting now): median", `${pageMedian.toFixed(1)} ms (target ≤ ${TARGET_MS} ms)`],
];
process.stdout.write(`\nReports (${MESSAGES.toLocaleString('en')} messages, ${CONVERSATIONS.toLocaleString('en')} conversations, ${DAYS} days)\n`);
for (const [what, value] of rows) process.stdout.write(`  ${what.padEnd(52)} ${value}\n`);

await connection.close();
redis.disconnect();
await Promise.all([redisHandle.stop(), mongoHandle.stop()]);
process.exitCode = median <= TARGET_MS && pageMedian <= TARGET_MS ? 0 : 1;
