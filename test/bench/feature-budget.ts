/**
 * Redis commands a message by feature: the service started again for each setting (the features
 * off, each feature on alone, all on), each on a MongoDB database of its own and numbers of its
 * own, sent the same messages (3 per number, in order), and counted by `INFO commandstats` until
 * the transcript outbox and the usage list it filled are empty (the writer's and the roll-ups'
 * commands included). Each figure is set beside bare BullMQ's per job measured in the same run.
 * `BENCH_MONITOR=1` also prints, per setting, the commands by key (Redis's MONITOR, ids folded to
 * `*`): where a feature's commands go. Every setting's row is followed by its commands by name. Used by `npm run bench:features` and the pipeline bench.
 */
import { connect } from 'node:net';
import type { Redis } from 'ioredis';
import { findFreePort } from '../support/services.js';
import { benchNumber, commandDelta, redisCommandCalls, serviceEnv, sleep, spawnServiceProcess, webhookSender, type Backing } from './rig.js';

const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const HOURS = { timeZone: 'UTC', weekly: { mon: ['00:00-24:00'], tue: ['00:00-24:00'], wed: ['00:00-24:00'], thu: ['00:00-24:00'] } };
const TEAMS = JSON.stringify({ support: { label: 'Support', webhooks: ['http://127.0.0.1:9/hook'], hours: HOURS } });

export interface FeatureSetting {
  name: string;
  env: Record<string, string>;
  /** Knowledge: an FAQ entry in the knowledge base, so every turn searches it (the bench's messages miss it). */
  knowledge?: boolean;
}

/** The settings measured: the floor, each feature alone, everything on. */
const FEATURE_SETTINGS: readonly FeatureSetting[] = [
  { name: 'features off (reports count, as always)', env: {} },
  { name: 'CSAT_ENABLED=true', env: { CSAT_ENABLED: 'true' } },
  { name: 'team hours (HANDOFF_TEAMS with hours)', env: { HANDOFF_TEAMS: TEAMS } },
  { name: 'knowledge (an FAQ; every message a miss)', env: {}, knowledge: true },
  { name: 'every feature on', env: { CSAT_ENABLED: 'true', HANDOFF_TEAMS: TEAMS }, knowledge: true },
];

export interface FeatureFigure {
  name: string;
  answered: number;
  sent: number;
  /** Messages a second, first webhook to last reply (a burst from 16 senders: the worker's pace). */
  perSecond: number;
  /** Bare BullMQ's jobs a second measured just before this setting (`reference`). */
  bareJobsPerSecond?: number;
  commands: number;
  byName: Map<string, number>;
  /** Commands a message by key pattern (BENCH_MONITOR=1 only). */
  byKey?: Map<string, number>;
}

/** A key with its ids folded: digits, uuid-like and long hex runs (message sids, script hashes) become `*`. */
const keyPattern = (key: string) =>
  key
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/gi, '*')
    .replace(/[0-9a-f]{16,}/gi, '*')
    .replace(/\d+/g, '*');

/**
 * Watches Redis's MONITOR on a socket of its own (ioredis's monitor mode threw on replies racing
 * its disconnect): commands by `command key-pattern` (a script's own calls marked `lua`).
 */
function monitorCounts(port: number) {
  const counts = new Map<string, number>();
  const socket = connect(port, '127.0.0.1', () => socket.write('MONITOR\r\n'));
  let buffered = '';
  socket.on('data', (chunk: Buffer) => {
    const lines = (buffered + chunk.toString()).split('\r\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const source = /^\+\d+\.\d+ \[\d+ ([^\]]+)\]/.exec(line)?.[1];
      if (!source) continue;
      const [command = '', key = '', , firstKey = ''] = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) => match[1] ?? '');
      // A script by the start of its hash and its first key.
      const what = command.toLowerCase() === 'evalsha' ? `${key.slice(0, 8)} ${keyPattern(firstKey)}` : keyPattern(key);
      const name = `${source === 'lua' ? 'lua ' : ''}${command.toLowerCase()} ${what}`;
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
  });
  socket.on('error', () => undefined);
  return { counts, stop: () => socket.destroy() };
}

/**
 * Waits (≤ 20 s) until the transcript outbox and every usage list are empty: the deferred work a
 * phase left. Returns the commands it sent itself, by name (taken off the phase's count).
 */
async function deferredDone(probe: Redis): Promise<Map<string, number>> {
  const own = new Map<string, number>();
  const note = (name: string, count = 1) => own.set(name, (own.get(name) ?? 0) + count);
  const backlog = async () => {
    const outboxes = await probe.keys('asst:tx:outbox:*');
    const usage = await probe.keys('asst:{usage:*}:pending');
    note('keys', 2);
    note('xlen', outboxes.length);
    note('llen', usage.length);
    const lengths = await Promise.all([...outboxes.map((key) => probe.xlen(key)), ...usage.map((key) => probe.llen(key))]);
    return lengths.reduce((sum, length) => sum + length, 0);
  };
  const deadline = Date.now() + 20_000;
  while ((await backlog()) > 0 && Date.now() < deadline) await sleep(250);
  return own;
}

/** One setting: its own web and worker, a warm-up, then `messages` counted. */
async function measureSetting(backing: Backing, setting: FeatureSetting, index: number, messages: number): Promise<FeatureFigure> {
  const { twilio, probe } = backing;
  const port = await findFreePort();
  const uri = new URL(backing.mongoUri);
  uri.pathname = `${uri.pathname}_f${index}`;
  const env = serviceEnv(backing, port, { MONGODB_URI: uri.toString(), ADMIN_TOKEN, WORKER_CONCURRENCY: '32', ...setting.env });
  const web = await spawnServiceProcess('web', env, { profile: false });
  const worker = await spawnServiceProcess('worker', env, { profile: false });
  try {
    if (setting.knowledge) await addFaq(port);
    const sender = webhookSender(port);
    const area = 600 + index * 10;
    const send = async (label: string, subArea: number, count: number) => {
      const before = twilio.messages.length;
      const startedAt = Date.now();
      const numbers = Math.ceil(count / 3);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < numbers) {
            const number = benchNumber(subArea, next++);
            for (let turn = 0; turn < 3; turn += 1) await sender.post(number, `${label} ${number} #${turn}`);
          }
        }),
      );
      await twilio.waitForMessages(before + numbers * 3, 120_000).catch(() => undefined);
      const replies = twilio.messages.slice(before);
      const seconds = (Math.max(startedAt, ...replies.map((reply) => reply.receivedAt)) - startedAt) / 1000;
      return { sent: numbers * 3, answered: replies.length, perSecond: replies.length / Math.max(seconds, 0.001) };
    };
    // Warm-up: the processes' code and connections, and the knowledge index built (its first turn).
    await send(`fw${index}`, area, Math.min(300, messages));
    await deferredDone(probe);
    const monitor = process.env.BENCH_MONITOR === '1' ? monitorCounts(backing.redis.port) : undefined;
    const before = await redisCommandCalls(probe);
    const { sent, answered, perSecond } = await send(`fm${index}`, area + 1, messages);
    const own = await deferredDone(probe);
    const per = Math.max(1, answered);
    const byName = commandDelta(before, await redisCommandCalls(probe), 1);
    for (const [name, count] of own) byName.set(name, (byName.get(name) ?? 0) - count);
    for (const [name, count] of byName) byName.set(name, count / per);
    monitor?.stop();
    let commands = 0;
    for (const count of byName.values()) commands += count;
    const byKey = monitor && new Map([...monitor.counts].map(([name, count]) => [name, count / per]));
    return { name: setting.name, answered, sent, perSecond, commands, byName, ...(byKey ? { byKey } : {}) };
  } finally {
    await web.stop();
    await worker.stop();
  }
}

async function addFaq(port: number) {
  const response = await fetch(`http://127.0.0.1:${port}/admin/knowledge/faq`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ entries: [{ question: 'What are your opening hours?', answer: 'We open from 9:00 to 18:00, Monday to Friday.' }] }),
  });
  if (response.status !== 201) throw new Error(`adding the bench FAQ answered ${response.status}: ${await response.text()}`);
}

/** Every setting in turn; prints a row each (and, with BENCH_MONITOR=1, its commands by key). */
export async function measureFeatureBudget(
  backing: Backing,
  options: {
    messages: number;
    bareCommandsPerJob: number;
    out: (line?: string) => void;
    settings?: readonly FeatureSetting[];
    /** Bare BullMQ's jobs a second now: measured before each setting, for its ratio (the VM's speed drifts). */
    reference?: () => Promise<number>;
  },
): Promise<FeatureFigure[]> {
  const { out, bareCommandsPerJob } = options;
  const figures: FeatureFigure[] = [];
  out(`Redis commands a message by feature (${options.messages} messages each, 3 per number; BullMQ alone ${bareCommandsPerJob.toFixed(1)} a job)`);
  // BENCH_FEATURE_SETTINGS=0,4 measures only those settings (by their place in the table).
  const only = process.env.BENCH_FEATURE_SETTINGS?.split(',').map(Number);
  const settings = options.settings ?? FEATURE_SETTINGS.filter((_, index) => !only || only.includes(index));
  for (const [index, setting] of settings.entries()) {
    const bareJobsPerSecond = await options.reference?.();
    const measured = await measureSetting(backing, setting, index, options.messages);
    const figure = { ...measured, ...(bareJobsPerSecond ? { bareJobsPerSecond } : {}) };
    figures.push(figure);
    const floor = figures[0];
    const overFloor =
      floor && floor !== figure ? `, ${figure.commands - floor.commands >= 0 ? '+' : ''}${(figure.commands - floor.commands).toFixed(1)} over the floor` : '';
    out(
      `  ${setting.name.padEnd(44)} ${figure.commands.toFixed(1)} = BullMQ + ${(figure.commands - bareCommandsPerJob).toFixed(1)}${overFloor}  (${figure.answered}/${figure.sent} answered; ${figure.perSecond.toFixed(0)} messages/s${bareJobsPerSecond ? ` = ${((100 * figure.perSecond) / bareJobsPerSecond).toFixed(1)}% of BullMQ's ${bareJobsPerSecond.toFixed(0)} jobs/s just before` : ''})`,
    );
    const names = [...figure.byName].filter(([, count]) => count >= 0.05).sort((a, b) => b[1] - a[1]);
    out(`      by command: ${names.map(([name, count]) => `${name} ${count.toFixed(2)}`).join(', ')}`);
    if (figure.byKey) {
      const top = [...figure.byKey].filter(([, count]) => count >= 0.05).sort((a, b) => b[1] - a[1]);
      for (const [name, count] of top) out(`      ${count.toFixed(2).padStart(6)}  ${name}`);
    }
  }
  return figures;
}
