/**
 * The README's quick start, run as written on a fresh copy of the project: `bash
 * scripts/start.sh` with nothing but a model key writes a working .env, starts its own Redis and
 * FerretDB, builds and runs the service, and the widget on /demo answers in a real browser. Ctrl-C
 * (SIGINT) stops the service and the stores it started: nothing is left running or listening.
 *
 * The copy has no .env, .data or dist; node_modules is the project's own (linked, so nothing is
 * downloaded), and the model key points at the tests' fake model through OPENAI_BASE_URL. Its
 * Redis and FerretDB listen on free ports (the script starts a store for any loopback URL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { launchBrowser, type LaunchedBrowser } from '../support/browser.js';
import { eventually } from '../support/harness.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { findFreePort } from '../support/services.js';
import { openWidget, textsOf, waitForText } from '../support/widget-page.js';

const root = process.cwd();
const SKIPPED = new Set(['node_modules', '.git', '.data', 'dist', '.env', 'test-artifacts', 'coverage']);

let script: ChildProcess | undefined;
let browser: LaunchedBrowser | undefined;
let stub: OpenAIStub | undefined;
let copy: string | undefined;
afterAll(async () => {
  script?.kill('SIGKILL');
  await browser?.close();
  await stub?.close();
  // Stores a failed run left behind are stopped the documented way.
  if (copy) {
    await new Promise((resolve) => spawn('bash', ['scripts/start.sh', '--stop'], { cwd: copy, stdio: 'ignore' }).once('exit', resolve));
    rmSync(copy, { recursive: true, force: true });
  }
});

const listening = (port: number) =>
  fetch(`http://127.0.0.1:${port}/`).then(
    () => true,
    (error: unknown) => !String((error as { cause?: { code?: string } }).cause?.code).includes('ECONNREFUSED'),
  );
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the quick start', () => {
  test('OPENAI_API_KEY=… bash scripts/start.sh gives a widget that answers; Ctrl-C leaves nothing running', async () => {
    copy = mkdtempSync(join(tmpdir(), 'wa-quick-start-'));
    // A fresh clone's files, times kept (so the lock file is not newer than the installed packages).
    cpSync(root, copy, { recursive: true, preserveTimestamps: true, filter: (source) => !SKIPPED.has(source.slice(root.length + 1).split('/')[0] ?? '') });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
    // Never newer than the installed packages (a checkout's lock can be): `npm ci` through the link
    // would empty the project's own node_modules.
    utimesSync(join(copy, 'package-lock.json'), new Date(0), new Date(0));
    stub = await startOpenAIStub();
    stub.respondWith({ text: 'Hello from the quick start.' });
    const [port, redisPort, mongoPort] = [await findFreePort(), await findFreePort(), await findFreePort()];
    const base = `http://127.0.0.1:${port}`;
    let output = '';
    script = spawn('bash', ['scripts/start.sh'], {
      cwd: copy,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...(process.env.FERRETDB_BIN ? { FERRETDB_CACHE_DIR: join(process.env.FERRETDB_BIN, '..') } : {}),
        OPENAI_API_KEY: 'sk-quick-start-test',
        OPENAI_BASE_URL: stub.baseUrl,
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        MONGODB_URI: `mongodb://127.0.0.1:${mongoPort}/wa-assistant`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    script.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    script.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => script!.once('exit', resolve));
    await eventually(async () => {
      if (script?.exitCode !== null) throw new Error(`start.sh exited early:\n${output}`);
      return (
        (await fetch(`${base}/healthz`)
          .then((response) => response.ok)
          .catch(() => false)) || undefined
      );
    }, 240_000);
    // The first run wrote a .env that works as it is: the key, a widget secret, WhatsApp off.
    const env = readFileSync(join(copy, '.env'), 'utf8');
    expect(env).toMatch(/^OPENAI_API_KEY=sk-quick-start-test$/m);
    expect(env).toMatch(/^WIDGET_TOKEN_SECRET=[0-9a-f]{64}$/m);
    expect(env).toMatch(/^# TWILIO_ACCOUNT_SID=/m);
    expect(output).toContain('start: wrote .env');

    browser = await launchBrowser();
    const { page } = await browser.newPage();
    await page.goto(`${base}/demo`);
    const parts = await openWidget(page);
    await parts.input.fill('Hello, are you there?');
    await parts.send.click();
    await waitForText(parts.assistantBubbles.last(), 'Hello from the quick start.', 30_000);
    expect(await textsOf(parts.visitorBubbles)).toEqual(['Hello, are you there?']);

    const pids = ['redis', 'ferretdb'].map((name) => Number(readFileSync(join(copy!, '.data', `${name}.pid`), 'utf8')));
    expect(pids.every(alive)).toBe(true);
    script.kill('SIGINT');
    await exited;
    for (const pid of pids) await eventually(() => !alive(pid) || undefined, 15_000);
    for (const listened of [port, redisPort, mongoPort]) expect(await listening(listened)).toBe(false);
    expect(existsSync(join(copy, '.data', 'redis.pid')) || existsSync(join(copy, '.data', 'ferretdb.pid'))).toBe(false);
    expect(output).toContain('start: stopped redis');
    expect(output).toContain('start: stopped ferretdb');
  }, 420_000);
});
