/**
 * `npm run bench:soak`: SOAK_TURNS (default 100k) WhatsApp turns through the web and worker
 * processes (as `npm run bench` runs them), in batches of 1000 from 10k numbers cycling, and
 * the RSS and live heap (after a full GC) of each process at 2k turns, after a warm-up (a tenth
 * of the run) and at the end: a leak shows as live-heap growth. 100k turns take about 5 minutes
 * here (~340 turns/s); `SOAK_TURNS=5000` for a quick run, `SOAK_EVERY` turns between progress lines.
 * Each progress line also prints CPU per turn, GC pauses and what RSS is made of (`memory-map.ts`);
 * the end adds RSS after a memory-reducing GC (what an idle process gives back). Every reading
 * forces a full GC, which holds the heap smaller than it would grow alone: compare runs with the
 * same SOAK_EVERY. MALLOC_ARENA_MAX, GLIBC_TUNABLES, UV_THREADPOOL_SIZE and SOAK_NODE_OPTIONS (as
 * NODE_OPTIONS) reach the service processes, to try a memory setting.
 */
import { readFile } from 'node:fs/promises';
import { findFreePort } from '../support/services.js';
import { readMemoryMap } from './memory-map.js';
import { benchNumber, serviceEnv, sleep, spawnServiceProcess, startBacking, webhookSender, type ProcessStats, type ServiceChild } from './rig.js';

const TURNS = Number(process.env.SOAK_TURNS ?? 100_000);
const SENDERS = 32;
const NUMBERS = 10_000;
const BATCH = 1000;
/** Turns before the first reading: connections, JIT and caches settle. */
const FIRST = Math.max(100, Math.min(2 * BATCH, Math.floor(TURNS / 10)));
/**
 * Turns before the reading growth is measured from: a tenth of the run. The worker's V8 heap
 * keeps growing its reservation while throughput still climbs (the JIT: ~220 turns/s at 2k turns,
 * ~340 from 30k) — measured from 2k turns that growth (+24% over 100k) looked like a leak while
 * the live heap stayed flat (+2%); the table prints growth from both readings.
 */
const WARM_UP = Math.max(FIRST, Math.floor(TURNS / 10));

const out = (line = '') => process.stdout.write(`${line}\n`);
const backing = await startBacking();
const port = await findFreePort();
/** Memory settings under trial reach the service processes (only them) through their environment; SOAK_NODE_OPTIONS is their NODE_OPTIONS. */
const trial = Object.fromEntries(
  ['MALLOC_ARENA_MAX', 'GLIBC_TUNABLES', 'UV_THREADPOOL_SIZE', 'SOAK_NODE_OPTIONS'].flatMap((name) =>
    process.env[name] ? [[name === 'SOAK_NODE_OPTIONS' ? 'NODE_OPTIONS' : name, process.env[name]]] : [],
  ),
);
const env = serviceEnv(backing, port, trial);
const web = await spawnServiceProcess('web', env);
const worker = await spawnServiceProcess('worker', env);
const { post } = webhookSender(port);

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const m = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
/** The stats reply with what service-process.ts adds for this breakdown. */
type MemoryStats = ProcessStats & { arrayBuffers?: number; spaces?: Record<string, number> };
/** One line per process: RSS split into file-backed, malloc (brk heap, arenas) and other anonymous memory, V8's share of that. */
async function breakdown(child: ServiceChild, stats: MemoryStats) {
  const map = await readMemoryMap(child.pid);
  if (!map) return;
  const spaces = stats.spaces ?? {};
  const v8 = Object.values(spaces).reduce((sum, bytes) => sum + bytes, 0);
  const big = Object.entries(spaces)
    .filter(([, bytes]) => bytes >= 2 ** 20)
    .map(([name, bytes]) => `${name.replace(/_space$/, '')} ${m(bytes)}`)
    .join(', ');
  out(
    `    ${child.role}: RSS ${m(map.rss)} MB = file ${m(map.file)} + brk heap ${m(map.brk)} + ${map.arenas} arenas ${m(map.arenaRss)} + other anon ${m(map.otherAnon)} (V8 pages ${m(v8)}: ${big}; rest ${m(map.otherAnon - v8)}); arrayBuffers ${m(stats.arrayBuffers ?? NaN)}, external ${m(stats.external)}`,
  );
}
/** CPU seconds a process has used (user + system, from /proc/<pid>/stat; clock ticks at 100 Hz). */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')).split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
let sent = 0;
let cpuBefore = { at: 0, web: 0, worker: 0 };
const started = performance.now();
/** Sends `count` turns (each number's messages one after another) and waits for every reply. */
async function run(count: number) {
  const goal = sent + count;
  while (sent < goal) {
    const batch = Math.min(BATCH, goal - sent);
    backing.twilio.reset();
    let next = 0;
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (next < batch) {
          const turn = sent + next++;
          await post(benchNumber(601, turn % NUMBERS), `soak ${turn}`);
        }
      }),
    );
    await backing.twilio.waitForMessages(batch, 1_800_000);
    sent += batch;
    if (sent % (process.env.SOAK_EVERY ? Number(process.env.SOAK_EVERY) : 10_000) === 0 || sent === BATCH * 2) {
      // RSS on the way too: a soak stopped early (a time bound) still shows the growth so far.
      const [webNow, workerNow] = await Promise.all([web.stats(), worker.stats()]);
      out(
        `  ${sent} turns, ${(sent / ((performance.now() - started) / 1000)).toFixed(1)}/s, RSS web ${mb(webNow.rss)}, worker ${mb(workerNow.rss)}; live heap web ${mb(webNow.heapUsed)}, worker ${mb(workerNow.heapUsed)}; worker heap reserved ${mb(workerNow.heapTotal)}, external ${mb(workerNow.external)}`,
      );
      // GC pauses since the last line: what a tighter heap costs shows here.
      const [webLoop, workerLoop] = await Promise.all([web.loop(), worker.loop()]);
      const cpu = { at: sent, web: await cpuSeconds(web.pid), worker: await cpuSeconds(worker.pid) };
      const perTurn = (seconds: number) => ((1000 * seconds) / (cpu.at - cpuBefore.at)).toFixed(2);
      out(`    CPU ms per turn since the last line: web ${perTurn(cpu.web - cpuBefore.web)}, worker ${perTurn(cpu.worker - cpuBefore.worker)}`);
      cpuBefore = cpu;
      out(
        `    GC pauses since the last line: web ${webLoop.gcCount} (${webLoop.gcTotal.toFixed(0)} ms), worker ${workerLoop.gcCount} (${workerLoop.gcTotal.toFixed(0)} ms, max ${workerLoop.gcMax.toFixed(0)} ms)`,
      );
      await breakdown(web, webNow);
      await breakdown(worker, workerNow);
    }
  }
}

out(
  `\nSoak: ${TURNS} turns (first reading after ${FIRST}, warm-up ${WARM_UP}), web and worker processes${Object.keys(trial).length ? `, with ${JSON.stringify(trial)}` : ''}`,
);
await run(FIRST);
await sleep(2_000);
const first = await Promise.all([web.stats(), worker.stats()]);
await run(WARM_UP - FIRST);
await sleep(2_000);
const start = await Promise.all([web.stats(), worker.stats()]);
await run(TURNS - WARM_UP);
await sleep(2_000);
const end = await Promise.all([web.stats(), worker.stats()]);
out(
  `| process | RSS at ${FIRST} turns | after warm-up (${WARM_UP}) | at the end (${TURNS}) | growth from warm-up | from ${FIRST} turns | live heap after warm-up | at the end | growth |\n|---|---|---|---|---|---|---|---|---|`,
);
const growth = (before: number, after: number) => `${((100 * (after - before)) / before).toFixed(1)}%`;
['web', 'worker'].forEach((name, index) => {
  const none = { rss: NaN, heapUsed: NaN };
  const [early, before, after] = [first[index] ?? none, start[index] ?? none, end[index] ?? none];
  out(
    `| ${name} | ${mb(early.rss)} | ${mb(before.rss)} | ${mb(after.rss)} | ${growth(before.rss, after.rss)} | ${growth(early.rss, after.rss)} | ${mb(before.heapUsed)} | ${mb(after.heapUsed)} | ${growth(before.heapUsed, after.heapUsed)} |`,
  );
});
out(`throughput over the soak: ${(sent / ((performance.now() - started) / 1000)).toFixed(1)} turns/s`);
await breakdown(web, end[0] ?? (await web.stats()));
await breakdown(worker, end[1] ?? (await worker.stats()));
// What an idle process gives back: V8's memory reducer (a memory-reducing GC once allocation stops) frees pooled pages.
process.kill(web.pid, 'SIGUSR2');
process.kill(worker.pid, 'SIGUSR2');
await sleep(3_000);
const reduced = await Promise.all([web.stats(), worker.stats()]);
out(`after a memory-reducing GC (what going idle gives back): RSS web ${mb(reduced[0]?.rss ?? NaN)}, worker ${mb(reduced[1]?.rss ?? NaN)}`);
await breakdown(web, reduced[0] ?? (await web.stats()));
await breakdown(worker, reduced[1] ?? (await worker.stats()));
await web.stop();
await worker.stop();
await backing.stop();
process.exit(0);
