/**
 * One service process for the benchmarks: `web` (webhooks) or `worker` (turns), built by the
 * same `createServices` as `src/main.ts`, with the deterministic model answering at once (the
 * model is excluded from every figure). The parent reads the process's own figures over IPC:
 * its RSS and the MongoDB commands its driver started (command monitoring, by command name), so
 * the bench counts MongoDB round trips per process whatever the pipeline's storage code does.
 * A message whose text contains `#slow` makes the model wait 3 s and prints `model-called` first,
 * for the killed-worker figure. SIGTERM closes like main.ts (and lets `--cpu-prof` write its file).
 */
import { appendFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { MockLanguageModelV4 } from 'ai/test';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { createDeterministicModels, keywordJudge } from '../support/deterministic-model.js';

const role = process.argv[2] === 'worker' ? 'worker' : 'web';
/**
 * The provider keeps every call, and so does each AI SDK mock model (`doGenerateCalls`,
 * `doStreamCalls`: every prompt whole, ~60 KB a turn): a soak of 100k turns must not measure them.
 */
const forgetCalls = () => {
  models.calls.length = 0;
  for (const tier of ['fast', 'smart'] as const) {
    const model = models.model(tier);
    if (!(model instanceof MockLanguageModelV4)) continue;
    model.doGenerateCalls.length = 0;
    model.doStreamCalls.length = 0;
  }
};
const models = createDeterministicModels(
  (call) => {
    forgetCalls();
    if (!call.userText.includes('#slow')) return { text: `ok ${call.userText}` };
    process.stdout.write(`model-called ${call.userText}\n`);
    return { text: `ok ${call.userText}`, delayMs: 3_000 };
  },
  (call) => {
    forgetCalls();
    return keywordJudge(call);
  },
);

const services = await createServices(loadConfig(), {
  models,
  logger: createLogger({ level: 'error', sink: (line) => process.stderr.write(`${line}\n`) }),
});

const mongoCommands: Record<string, number> = {};
services.mongo.getClient().on('commandStarted', (event) => {
  mongoCommands[event.commandName] = (mongoCommands[event.commandName] ?? 0) + 1;
});

let server: Server | undefined;
if (role === 'web') {
  server = services.app.listen(services.config.port, '127.0.0.1');
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve) => server?.once('listening', resolve));
} else {
  await services.startWorker().waitUntilReady();
}

// Event-loop stalls and GC pauses, read (and reset) by the parent per phase: a tail latency
// that is not queueing in Redis is time this process could not run its callbacks.
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();
const gcPauses: number[] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcPauses.push(entry.duration);
    // BENCH_GC_LOG=<path>: every GC (epoch ms, pause ms, kind: 1 minor, 4 major, 8 incremental) to <path>.<role>,
    // to line GCs up with a phase's slowest messages (the paced phase prints its start in epoch ms).
    if (process.env.BENCH_GC_LOG)
      appendFileSync(
        `${process.env.BENCH_GC_LOG}.${role}`,
        `${(performance.timeOrigin + entry.startTime).toFixed(1)} ${entry.duration.toFixed(1)} ${(entry as { detail?: { kind?: number } }).detail?.kind}\n`,
      );
  }
}).observe({ entryTypes: ['gc'] });

process.on('message', (message) => {
  if (message === 'loop') {
    const ms = (ns: number) => ns / 1e6;
    process.send?.({
      loop: {
        p50: ms(loopDelay.percentile(50)),
        p99: ms(loopDelay.percentile(99)),
        max: ms(loopDelay.max),
        gcCount: gcPauses.length,
        gcTotal: gcPauses.reduce((sum, pause) => sum + pause, 0),
        gcMax: Math.max(0, ...gcPauses),
      },
    });
    loopDelay.reset();
    gcPauses.length = 0;
    return;
  }
  if (message === 'metrics') {
    void services.metrics.render().then((text) => process.send?.({ metrics: text }));
    return;
  }
  if (message !== 'stats' && message !== 'stats-no-gc') return;
  // Started with --expose-gc (rig.ts): heapUsed after a full collection is the live heap.
  if (message === 'stats') (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  // What V8 holds in memory per space (committed pages actually touched), for the soak's breakdown of RSS.
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name, space.physical_space_size]));
  process.send?.({ rss, heapUsed, heapTotal, external, arrayBuffers, spaces, mongoCommands: { ...mongoCommands } });
});
// SIGUSR2 (the soak, once at its end): a memory-reducing GC, as V8's memory reducer runs when a
// process goes idle — RSS after it shows how much of the growth was V8's free pages kept for reuse.
process.on('SIGUSR2', () => {
  (globalThis as { gc?: (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void }).gc?.({
    type: 'major',
    execution: 'sync',
    flavor: 'last-resort',
  });
});
process.once('SIGTERM', () => {
  // A worker still holding slow turns stops anyway after 20 s (exit still writes the CPU profile).
  setTimeout(() => process.exit(0), 20_000).unref();
  services.beginShutdown();
  server?.close();
  server?.closeAllConnections();
  void services.close().then(() => process.exit(0));
});
process.stdout.write(`${role}-ready\n`);
