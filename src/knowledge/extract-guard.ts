/**
 * Reading pages and documents off the event loop, within a budget. One worker thread per process
 * (`extract-thread.ts`), started on first use and stopped after a while idle, reads one file at a
 * time, the others waiting their turn. Each read gets `timeMs` (default 20 s) and the thread
 * `memoryMb` of heap (default 512 MB); past either the thread is stopped (the next read starts a
 * new one) and the file refused with the reason (`MediaRejectedError`), as are the caps
 * `extract.ts` applies (depth, pages, inflated bytes). The process keeps answering meanwhile.
 */
import { Worker } from 'node:worker_threads';
import { MediaRejectedError, type MediaFailure } from '../media/content-check.js';
import type { ExtractedPage } from './extract.js';

const TIME_BUDGET_MS = 20_000;
const MEMORY_BUDGET_MB = 512;
const IDLE_MS = 30_000;

export type ExtractTask = { id: number } & (
  { kind: 'html'; html: string; url: string; robots?: string | null | undefined } | { kind: 'pdf'; bytes: Uint8Array }
);
export type ExtractReply =
  { id: number; ok: true; result: ExtractedPage | { text: string; pages: number } } | { id: number; ok: false; reason: MediaFailure; message: string };

/** The thread's module: the compiled `.js` beside this one, or the `.ts` source when run from it (a TypeScript loader is then passed on). */
const THREAD = new URL(`./extract-thread.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);
const threadArgv = () =>
  THREAD.pathname.endsWith('.ts') && !process.execArgv.some((flag) => /tsx|register-ts/.test(flag)) ? [...process.execArgv, '--import', 'tsx'] : undefined;

interface Waiting {
  task: ExtractTask;
  timeMs: number;
  resolve: (reply: ExtractReply) => void;
  reject: (error: Error) => void;
}

let worker: Worker | undefined;
let current: (Waiting & { timer: NodeJS.Timeout }) | undefined;
let idle: NodeJS.Timeout | undefined;
const queue: Waiting[] = [];
let nextId = 1;

function stop(error: Error): void {
  const stopped = worker;
  worker = undefined;
  void stopped?.terminate();
  if (current) {
    clearTimeout(current.timer);
    current.reject(error);
    current = undefined;
  }
  next();
}

function thread(): Worker {
  if (worker) return worker;
  const argv = threadArgv();
  const started = new Worker(THREAD, {
    resourceLimits: { maxOldGenerationSizeMb: MEMORY_BUDGET_MB, maxYoungGenerationSizeMb: 64, stackSizeMb: 8 },
    ...(argv ? { execArgv: argv } : {}),
  });
  started.unref();
  started.on('message', (reply: ExtractReply) => {
    if (!current || reply.id !== current.task.id) return;
    clearTimeout(current.timer);
    current.resolve(reply);
    current = undefined;
    next();
  });
  started.on('error', (error: Error & { code?: string }) => {
    if (worker !== started) return;
    const tooBig = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
    stop(
      new MediaRejectedError(
        tooBig ? 'too-large' : 'unreadable',
        tooBig ? `reading it needs more than ${MEMORY_BUDGET_MB} MB` : `it could not be read (${error.message})`,
      ),
    );
  });
  started.on('exit', () => {
    if (worker === started) stop(new MediaRejectedError('unreadable', 'the reader stopped while reading it'));
  });
  worker = started;
  return started;
}

function next(): void {
  if (current) return;
  const waiting = queue.shift();
  if (!waiting) {
    if (worker && !idle) {
      idle = setTimeout(() => {
        idle = undefined;
        if (!current && queue.length === 0) stop(new Error('idle'));
      }, IDLE_MS);
      idle.unref();
    }
    return;
  }
  if (idle) clearTimeout(idle);
  idle = undefined;
  const timer = setTimeout(() => stop(new MediaRejectedError('unreadable', `reading it took longer than ${waiting.timeMs} ms`)), waiting.timeMs);
  current = { ...waiting, timer };
  thread().postMessage(waiting.task);
}

async function run(task: ExtractTask, timeMs: number): Promise<ExtractReply> {
  const reply = await new Promise<ExtractReply>((resolve, reject) => {
    queue.push({ task, timeMs, resolve, reject });
    next();
  });
  if (!reply.ok) throw new MediaRejectedError(reply.reason, reply.message);
  return reply;
}

export interface ReadBudget {
  timeMs?: number | undefined;
}

/** An HTML page's content, read in the thread (see `extractHtml`). */
export async function readHtml(html: string, url: string, robots?: string | null, budget: ReadBudget = {}): Promise<ExtractedPage> {
  const reply = await run({ id: nextId++, kind: 'html', html, url, robots }, budget.timeMs ?? TIME_BUDGET_MS);
  return (reply as Extract<ExtractReply, { ok: true }>).result as ExtractedPage;
}

/** A PDF's text, read in the thread (see `extractPdf`). */
export async function readPdf(bytes: Uint8Array, budget: ReadBudget = {}): Promise<{ text: string; pages: number }> {
  const reply = await run({ id: nextId++, kind: 'pdf', bytes }, budget.timeMs ?? TIME_BUDGET_MS);
  return (reply as Extract<ExtractReply, { ok: true }>).result as { text: string; pages: number };
}
