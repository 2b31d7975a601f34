/**
 * Starts `worker-process.ts` as its own OS process for a harness (its environment and queue
 * prefix), for tests that kill a worker or let one die; resolves once the worker is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { eventually } from './harness.js';
import { RUN_TS } from './run-ts.js';

export interface WorkerProcess {
  process: ChildProcess;
  /** Everything it wrote so far (stdout and stderr). */
  output: () => string;
  /** Resolves when it has exited (at once if it already has). */
  exited: Promise<unknown>;
}

export async function startWorkerProcess(
  env: Record<string, string>,
  queuePrefix: string,
  modelDelayMs = 0,
  extra: Record<string, string> = {},
): Promise<WorkerProcess> {
  const spawned = spawn(process.execPath, [...RUN_TS, 'test/support/worker-process.ts'], {
    env: { ...process.env, ...env, ...extra, TEST_QUEUE_PREFIX: queuePrefix, TEST_MODEL_DELAY_MS: String(modelDelayMs) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  spawned.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  spawned.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => spawned.once('exit', resolve));
  // A loaded machine starts a TypeScript process slowly; one that never gets ready is not left behind.
  await eventually(() => output.includes('worker-ready'), 45_000).catch((error: unknown) => {
    spawned.kill('SIGKILL');
    throw error;
  });
  return { process: spawned, output: () => output, exited };
}
