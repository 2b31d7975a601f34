/**
 * What the pipeline benchmarks share: the backing services (Redis, a FerretDB the bench can
 * pause, the fake Twilio API), the web and worker as separate processes (`service-process.ts`,
 * optionally under `--cpu-prof` when BENCH_CPU_PROFILE names a directory), a signed-webhook
 * sender, Redis's own command counts (`INFO commandstats`) and percentiles. Loopback only.
 * The service processes run compiled, as production does (`node --enable-source-maps` on tsc's
 * output, built once per run into dist/bench by test/bench/tsconfig.json); BENCH_FROM_SOURCE=1
 * runs them from TypeScript under tsx instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { PUBLIC_BASE_URL, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, TEST_SENDER, type FakeTwilio } from '../support/harness.js';
import { startMongo, startRedis, startRestartableFerretDb, type RedisHandle, type RestartableMongoHandle } from '../support/services.js';
import { inboundWhatsappParams, newTwilioSid, signedWebhook } from '../support/twilio-signature.js';

export interface Backing {
  redis: RedisHandle;
  /** The database URI with this run's database name and driver command monitoring on. */
  mongoUri: string;
  /** Our own FerretDB (pausable), or undefined when MONGODB_URI names an external server. */
  ferret: RestartableMongoHandle | undefined;
  twilio: FakeTwilio;
  /** A connection of the bench's own, for INFO and seeding (its INFO calls are not counted). */
  probe: Redis;
  stop(): Promise<void>;
}

export async function startBacking(): Promise<Backing> {
  // Persisted as production runs it (docs/architecture.md, "Transcripts: Redis first, MongoDB behind"): AOF, fsync every second.
  const redis = await startRedis(['--appendonly', 'yes', '--appendfsync', 'everysec']);
  const external = process.env.MONGODB_URI !== undefined && process.env.MONGODB_URI !== '';
  const ferret = external ? undefined : await startRestartableFerretDb();
  const mongo = ferret ?? (await startMongo());
  const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
  const uri = new URL(mongo.uri);
  uri.pathname = `/bench_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  uri.searchParams.set('monitorCommands', 'true');
  const probe = new Redis(redis.url);
  return {
    redis,
    mongoUri: uri.toString(),
    ferret,
    twilio,
    probe,
    async stop() {
      await probe.quit();
      await twilio.close();
      await mongo.stop();
      await redis.stop();
    },
  };
}

/** The service's environment for the bench: production defaults except what a bench must set. */
export function serviceEnv(backing: Backing, port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    PORT: String(port),
    PUBLIC_BASE_URL,
    REDIS_URL: backing.redis.url,
    MONGODB_URI: backing.mongoUri,
    TWILIO_ACCOUNT_SID: TEST_ACCOUNT_SID,
    TWILIO_AUTH_TOKEN: TEST_AUTH_TOKEN,
    TWILIO_WHATSAPP_FROM: TEST_SENDER,
    TWILIO_API_BASE_URL: backing.twilio.baseUrl,
    OPENAI_API_KEY: 'bench-key-not-used',
    WEB_SITES: '[]',
    LOG_LEVEL: 'error',
    ...(process.env.BENCH_GC_LOG ? { BENCH_GC_LOG: process.env.BENCH_GC_LOG } : {}),
    // Burst coalescing (when the pipeline has it) would wait between messages: throughput is measured without it.
    COALESCE_MS: '0',
    ...extra,
  };
}

export interface ProcessStats {
  rss: number;
  heapUsed: number;
  /** The V8 heap as reserved (live or not), and memory held outside it (buffers): with heapUsed, what RSS is made of. */
  heapTotal: number;
  external: number;
  mongoCommands: Record<string, number>;
}

/** A process's event-loop delay (ms, sampled every 5 ms) and GC pauses since the last reading. */
export interface LoopStats {
  p50: number;
  p99: number;
  max: number;
  gcCount: number;
  gcTotal: number;
  gcMax: number;
}

export interface ServiceChild {
  role: 'web' | 'worker';
  pid: number;
  output(): string;
  /**
   * Its RSS, heap and MongoDB command counts. By default it collects garbage first (heapUsed is
   * then the live heap); `collectGarbage: false` does not: a forced full GC resets V8's heap
   * sizing, which put a major GC a few seconds into whatever phase came next.
   */
  stats(options?: { collectGarbage?: boolean }): Promise<ProcessStats>;
  /** The process's Prometheus metrics text (`/metrics` without an HTTP server). */
  metrics(): Promise<string>;
  /** Its event-loop delay and GC pauses since the last call (the first call: since start). */
  loop(): Promise<LoopStats>;
  /** Resolves once the process printed `text`. */
  waitFor(text: string, timeoutMs?: number): Promise<void>;
  /** SIGTERM and wait (a CPU profile is written on this exit). */
  stop(): Promise<void>;
  /** SIGKILL and wait, as a crash would. */
  kill(): Promise<void>;
}

/** The CPU profile directory (BENCH_CPU_PROFILE), if profiles are wanted. */
export const cpuProfileDirectory = process.env.BENCH_CPU_PROFILE || undefined;

/** Runs the service processes from TypeScript under tsx (BENCH_FROM_SOURCE=1) rather than compiled. */
export const fromSource = process.env.BENCH_FROM_SOURCE === '1';
let built: Promise<void> | undefined;

/** Compiles service-process.ts, src/main.ts and everything they import (once per run) into dist/bench. */
function buildBench(): Promise<void> {
  built ??= new Promise((resolve, reject) => {
    const tsc = fileURLToPath(new URL('../../node_modules/.bin/tsc', import.meta.url));
    const config = fileURLToPath(new URL('tsconfig.json', import.meta.url));
    const child = spawn(process.execPath, [tsc, '-p', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`compiling the service processes failed (tsc exit ${code}):\n${output.slice(-3000)}`));
    });
  });
  return built;
}

/** The path of the compiled service-process.js. */
async function builtServiceProcess(): Promise<string> {
  await buildBench();
  return fileURLToPath(new URL('../../dist/bench/test/bench/service-process.js', import.meta.url));
}

/** The node flags production gives a process of `role`: its line in the Procfile (`web: node <flags> dist/src/main.js web`). */
export async function productionNodeFlags(role: 'web' | 'worker'): Promise<string[]> {
  const procfile = await readFile(fileURLToPath(new URL('../../Procfile', import.meta.url)), 'utf8');
  const line = new RegExp(`^${role}:\\s*node\\s+(.*?)\\s*dist/src/main\\.js\\s+${role}\\s*$`, 'm').exec(procfile);
  if (!line) throw new Error(`the Procfile has no \`${role}: node … dist/src/main.js ${role}\` line`);
  return line[1]!.split(/\s+/).filter(Boolean);
}

/** How to run the service's own entry (`main.js web|worker|all`) as production does: compiled, or from source under tsx (BENCH_FROM_SOURCE=1). */
export async function mainEntry(): Promise<string[]> {
  if (fromSource) return ['--import', 'tsx', 'src/main.ts'];
  await buildBench();
  return [fileURLToPath(new URL('../../dist/bench/src/main.js', import.meta.url))];
}

export async function spawnServiceProcess(role: 'web' | 'worker', env: Record<string, string>, options: { profile?: boolean } = {}): Promise<ServiceChild> {
  const profile = options.profile !== false && cpuProfileDirectory !== undefined;
  const args = [
    // A stats request collects garbage first, so heapUsed is what stays alive (a leak), not what waits for a GC.
    '--expose-gc',
    // As production runs them (the Procfile's flags for the role; docs/observability.md and docs/deployment.md, "Memory").
    ...(await productionNodeFlags(role)),
    ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDirectory}`, `--cpu-prof-name=${role}.${Date.now()}.cpuprofile`] : []),
    ...(fromSource ? ['--import', 'tsx', 'test/bench/service-process.ts'] : ['--enable-source-maps', await builtServiceProcess()]),
    role,
  ];
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  const waiters = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-200_000);
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const waitFor = (text: string, timeoutMs = 60_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (output.includes(text)) finish(undefined);
        else if (child.exitCode !== null || child.signalCode !== null) finish(new Error(`${role} exited:\n${output.slice(-3000)}`));
      };
      const timer = setTimeout(() => finish(new Error(`${role} did not print "${text}" within ${timeoutMs} ms:\n${output.slice(-3000)}`)), timeoutMs);
      const finish = (error: Error | undefined) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (error) reject(error);
        else resolve();
      };
      waiters.add(check);
      void exited.then(check);
      check();
    });
  await waitFor(`${role}-ready`);
  const end = async (signal: NodeJS.Signals) => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  /** Sends `request` over IPC; resolves with the first reply carrying `field`. */
  const ask = (request: string, field: string) =>
    new Promise<object>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${role} did not answer a ${request} request`)), 30_000);
      const onMessage = (message: unknown) => {
        if (typeof message !== 'object' || message === null || !(field in message)) return;
        clearTimeout(timer);
        child.removeListener('message', onMessage);
        resolve(message);
      };
      child.on('message', onMessage);
      child.send(request);
    });
  return {
    role,
    pid: child.pid ?? 0,
    output: () => output,
    waitFor,
    stats: async ({ collectGarbage = true } = {}) => (await ask(collectGarbage ? 'stats' : 'stats-no-gc', 'rss')) as ProcessStats,
    metrics: async () => String(((await ask('metrics', 'metrics')) as { metrics: unknown }).metrics),
    loop: async () => ((await ask('loop', 'loop')) as { loop: LoopStats }).loop,
    stop: () => end('SIGTERM'),
    kill: () => end('SIGKILL'),
  };
}

/** Posts signed WhatsApp webhooks to the web process; remembers when each body was sent. */
export function webhookSender(port: number) {
  const path = '/webhooks/whatsapp';
  const sentAt = new Map<string, number>();
  // node:http with kept-alive sockets: fetch (undici and its web streams) cost the bench, which
  // shares the cores with what it measures, more CPU than the web process spent answering.
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  return {
    sentAt,
    /** The acknowledgement time in ms; throws on anything but 200. */
    post(from: string, body: string, messageSid: string = newTwilioSid(), timeoutMs = 30_000): Promise<number> {
      const params = inboundWhatsappParams({ accountSid: TEST_ACCOUNT_SID, from, to: TEST_SENDER, body, messageSid });
      const signed = signedWebhook(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}${path}`, params);
      sentAt.set(body, Date.now());
      const started = performance.now();
      return new Promise((resolve, reject) => {
        const request = httpRequest(
          {
            host: '127.0.0.1',
            port,
            path,
            method: 'POST',
            agent,
            headers: { ...signed.headers, 'Content-Length': Buffer.byteLength(signed.body) },
            timeout: timeoutMs,
          },
          (response) => {
            response.resume();
            response.once('error', reject);
            response.once('end', () => {
              if (response.statusCode === 200) resolve(performance.now() - started);
              else reject(new Error(`webhook answered ${response.statusCode}`));
            });
          },
        );
        request.once('timeout', () => request.destroy(new Error(`webhook not answered within ${timeoutMs} ms`)));
        request.once('error', reject);
        request.end(signed.body);
      });
    },
  };
}

/** A WhatsApp number of the bench: `whatsapp:+1<area><7 digits>`. */
export const benchNumber = (area: number, index: number) => `whatsapp:+1${area}${String(index).padStart(7, '0')}`;

/** Calls per command Redis has executed (INFO itself excluded; a script's own calls counted under their names). */
export async function redisCommandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) if (match[1] !== 'info') calls.set(match[1] ?? '', Number(match[2]));
  return calls;
}

/** Calls per command between two readings, divided by `per`. */
export function commandDelta(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, per: number): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, count] of after) {
    const added = count - (before.get(name) ?? 0);
    if (added > 0) delta.set(name, added / per);
  }
  return delta;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

export const sumCommands = (counts: Record<string, number>) => Object.values(counts).reduce((sum, count) => sum + count, 0);

/** `after - before` per command name, both processes summed. */
export function mongoDelta(before: readonly ProcessStats[], after: readonly ProcessStats[]): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const stats of after) for (const [name, count] of Object.entries(stats.mongoCommands)) delta[name] = (delta[name] ?? 0) + count;
  for (const stats of before) for (const [name, count] of Object.entries(stats.mongoCommands)) delta[name] = (delta[name] ?? 0) - count;
  for (const [name, count] of Object.entries(delta)) if (count === 0) delete delta[name];
  return delta;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** The functions with the most self time (idle excluded) in each CPU profile the run wrote. */
export async function summarizeProfiles(directory: string, top = 8): Promise<string[]> {
  const lines: string[] = [];
  for (const file of (await readdir(directory)).filter((name) => name.endsWith('.cpuprofile')).sort()) {
    const profile = JSON.parse(await readFile(join(directory, file), 'utf8')) as { nodes: ProfileNode[]; samples?: number[] };
    const hits = new Map<string, number>();
    let total = 0;
    let idle = 0;
    for (const node of profile.nodes) {
      const count = node.hitCount ?? 0;
      if (node.callFrame.functionName === '(idle)') {
        idle += count;
        continue;
      }
      total += count;
      const { functionName, url, lineNumber } = node.callFrame;
      const where = url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|channels|test)\//, '$1/')}:${lineNumber + 1}` : '';
      const key = `${functionName || '(anonymous)'} ${where}`.trim();
      hits.set(key, (hits.get(key) ?? 0) + count);
    }
    lines.push(`${file}: busy ${((100 * total) / Math.max(1, total + idle)).toFixed(0)}% of ${total + idle} samples; share of busy time:`);
    for (const [name, count] of [...hits].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      lines.push(`  ${((100 * count) / Math.max(1, total)).toFixed(1).padStart(5)}%  ${name}`);
    }
  }
  return lines;
}

/** The pid of the first process whose command line (arguments joined by spaces) `matches` (Linux /proc). */
export async function findProcess(matches: (commandLine: string) => boolean): Promise<number | undefined> {
  for (const entry of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(entry)) continue;
    const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (matches(commandLine.replaceAll('\0', ' '))) return Number(entry);
  }
  return undefined;
}

/** CPU seconds (user + system) a process has used so far; 0 when it cannot be read. */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of /proc/<pid>/stat (here 11 and 12 after the name), in clock ticks (100/s).
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100;
}

/**
 * Milliseconds a process (all its threads) has waited on a run queue so far: runnable but not
 * running because the cores were busy (Linux schedstat); 0 when it cannot be read.
 */
export async function runQueueWaitMs(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  let total = 0;
  for (const task of tasks) {
    const stat = await readFile(`/proc/${pid}/task/${task}/schedstat`, 'utf8').catch(() => '');
    total += Number(stat.split(' ')[1] ?? 0) / 1e6;
  }
  return total;
}

/** Write-type system calls (socket and file writes) a process has made so far; 0 when unreadable. */
export async function writeSyscalls(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  const io = await readFile(`/proc/${pid}/io`, 'utf8').catch(() => '');
  return Number(/^syscw: (\d+)$/m.exec(io)?.[1] ?? 0);
}

/**
 * The machine's stall counters so far (ms): time some task waited for a core (PSI cpu "some"),
 * for the disk (PSI io "some"), and CPU time the hypervisor gave to another guest (steal).
 * A stall that shows here came from outside this stack's code. 0 where the kernel lacks PSI.
 */
export async function machineStallMs(): Promise<{ cpu: number; io: number; steal: number }> {
  const some = async (resource: string) =>
    Number(/^some .*total=(\d+)$/m.exec(await readFile(`/proc/pressure/${resource}`, 'utf8').catch(() => ''))?.[1] ?? 0) / 1000;
  const steal = Number((await readFile('/proc/stat', 'utf8').catch(() => '')).split('\n')[0]?.trim().split(/\s+/)[8] ?? 0) * 10;
  return { cpu: await some('cpu'), io: await some('io'), steal };
}

/**
 * Redis's own latency monitor since it was reset: per event (`command`, `fast-command`,
 * `aof-write`, `aof-fsync-always`, `expire-cycle`…) the seconds with a spike over the threshold
 * and the worst; Redis blocked outside a command (disk, expiry) shows here and not in SLOWLOG.
 */
export async function redisLatencyEvents(redis: Redis): Promise<{ event: string; spikes: number; maxMs: number }[]> {
  const latest = (await redis.call('LATENCY', 'LATEST')) as [string, number, number, number][];
  return Promise.all(
    latest.map(async ([event, , , maxMs]) => {
      const history = (await redis.call('LATENCY', 'HISTORY', event)) as [number, number][];
      return { event, spikes: history.length, maxMs };
    }),
  );
}

/**
 * The same small computation (~0.3 ms) every 20 ms on a thread of its own (~1.5% of a core); per
 * run, the time it was on a core: wall time minus the thread's run-queue wait (schedstat), so
 * waiting for a free core does not count (the kernel's per-thread CPU clocks tick too coarsely).
 */
const CPU_PROBE_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const onCore = () => performance.now() - Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
const samples = [];
let sink = 0;
const timer = setInterval(() => {
  const before = onCore();
  for (let index = 0; index < 10000; index += 1) sink = (sink + index * index) % 1000003;
  samples.push(Date.now(), onCore() - before);
}, 20);
parentPort.on('message', () => { clearInterval(timer); parentPort.postMessage({ samples, sink }); });
`;

export interface CpuProbeResult {
  /** The computation's usual CPU time (median, ms). */
  medianMs: number;
  /** Runs of slow samples (≥ 3× the median; a gap over 300 ms starts a new one): epoch ms, and the slowest sample's cost over the median. */
  episodes: { from: number; to: number; worst: number }[];
}

/**
 * Whether the CPU itself slowed during a phase: a fixed computation's time on a core grows when the
 * host hands the VM's cores to someone else without reporting steal (waiting for a core does not
 * count: only the time it ran). A stall that lines up with an episode is the machine's, not the code's.
 */
export function startCpuProbe(): { stop(): Promise<CpuProbeResult> } {
  const worker = new Worker(CPU_PROBE_SOURCE, { eval: true });
  return {
    async stop() {
      const { samples } = await new Promise<{ samples: number[] }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.postMessage('stop');
      });
      await worker.terminate();
      const costs = samples.filter((_, index) => index % 2 === 1);
      const medianMs = percentile(costs, 50);
      const episodes: CpuProbeResult['episodes'] = [];
      for (let index = 0; index < samples.length; index += 2) {
        const at = samples[index] ?? 0;
        const cost = samples[index + 1] ?? 0;
        if (cost < 3 * medianMs) continue;
        const last = episodes.at(-1);
        if (last && at - last.to <= 300) {
          last.to = at;
          last.worst = Math.max(last.worst, cost / medianMs);
        } else episodes.push({ from: at - cost, to: at, worst: cost / medianMs });
      }
      return { medianMs, episodes };
    },
  };
}

/** The whole machine's busy CPU seconds so far, every process's (Linux /proc/stat: all but idle and iowait). */
export async function machineBusySeconds(): Promise<number> {
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] =
    (await readFile('/proc/stat', 'utf8').catch(() => '')).split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  return (user + nice + system + irq + softirq + steal) / 100;
}

export interface HistogramTotal {
  /** Seconds, all samples. */
  sum: number;
  count: number;
}

/** Every histogram series in a Prometheus text (`name{labels}` as printed) with its sum and count. */
export function histogramTotals(text: string): Map<string, HistogramTotal> {
  const totals = new Map<string, HistogramTotal>();
  for (const match of text.matchAll(/^(\w+)_(sum|count)(\{[^}]*\})? (\S+)$/gm)) {
    const [, name, field, labels, value] = match;
    const key = `${name}${labels ?? ''}`;
    const total = totals.get(key) ?? { sum: 0, count: 0 };
    total[field === 'sum' ? 'sum' : 'count'] = Number(value);
    totals.set(key, total);
  }
  return totals;
}

/**
 * A histogram's samples between two readings of one process: the series named `name` whose
 * labels include every `label="value"` in `labels`, summed. The mean is in milliseconds.
 */
export function histogramDelta(before: Map<string, HistogramTotal>, after: Map<string, HistogramTotal>, name: string, labels: readonly string[] = []) {
  let sum = 0;
  let count = 0;
  for (const [key, total] of after) {
    if (!key.startsWith(`${name}{`) && key !== name) continue;
    if (!labels.every((label) => key.includes(label))) continue;
    sum += total.sum - (before.get(key)?.sum ?? 0);
    count += total.count - (before.get(key)?.count ?? 0);
  }
  return { count, meanMs: count > 0 ? (1000 * sum) / count : NaN };
}

/**
 * A histogram's p-th percentile between two readings of one process, as the upper bound of the
 * bucket it falls in (`≤ 25` ms): the series named `name` whose labels include every `labels`, summed.
 */
export function histogramPercentile(before: string, after: string, name: string, p: number, labels: readonly string[] = []): string {
  const buckets = (text: string) => {
    const counts = new Map<number, number>();
    for (const match of text.matchAll(new RegExp(`^${name}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
      const [, labelText = '', value] = match;
      if (!labels.every((label) => labelText.includes(label))) continue;
      const le = /le="([^"]+)"/.exec(labelText)?.[1] ?? '+Inf';
      const bound = le === '+Inf' ? Infinity : Number(le);
      counts.set(bound, (counts.get(bound) ?? 0) + Number(value));
    }
    return counts;
  };
  const start = buckets(before);
  const cumulative = [...buckets(after)].map(([bound, count]) => [bound, count - (start.get(bound) ?? 0)] as const).sort((a, b) => a[0] - b[0]);
  const total = cumulative.at(-1)?.[1] ?? 0;
  if (total === 0) return 'no samples';
  const found = cumulative.find(([, count]) => count >= (p / 100) * total);
  return found && Number.isFinite(found[0]) ? `≤ ${1000 * found[0]}` : `> ${1000 * (cumulative.at(-2)?.[0] ?? 0)}`;
}
