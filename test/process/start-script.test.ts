/**
 * `scripts/start.sh` before it starts anything: the first run writes a `.env` for whichever
 * provider the environment gives (Anthropic's key alone; an OpenAI-compatible server's URL alone,
 * taking the first model it lists; a server not listening is said so, with how to start Ollama),
 * a configuration error or a taken port stops it with one line before a store is started or a
 * build is run, a variable given on the command line wins over `.env`, said once, and a local
 * PUBLIC_BASE_URL from `.env` follows PORT. Most runs end at the taken port (or the
 * configuration), so nothing here builds or reaches a provider: the only servers asked are
 * loopback stubs. `--stop` while a start runs stops that start first (its service, then its
 * stores), and says when there is nothing to stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { eventually } from '../support/harness.js';
import { findFreePort } from '../support/services.js';

const root = process.cwd();
const SKIPPED = new Set(['node_modules', '.git', '.data', 'dist', '.env', 'test-artifacts', 'coverage', 'test']);

let copy: string;
let squatter: Server;
let takenPort: number;
let models: Server;
let modelsUrl: string;
beforeAll(async () => {
  copy = mkdtempSync(join(tmpdir(), 'wa-start-script-'));
  cpSync(root, copy, { recursive: true, filter: (source) => !SKIPPED.has(source.slice(root.length + 1).split('/')[0] ?? '') });
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  // Never older than the installed packages: the script must not run `npm ci` here.
  utimesSync(join(copy, 'package-lock.json'), new Date(0), new Date(0));
  squatter = createServer((_request, response) => response.end('another program'));
  await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  takenPort = (squatter.address() as AddressInfo).port;
  // An Ollama-like server: its models list, no key wanted.
  models = createServer((request, response) => {
    response.writeHead(request.url === '/v1/models' ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ object: 'list', data: [{ id: 'llama3.1:8b' }, { id: 'qwen2.5:7b' }] }));
  });
  await new Promise<void>((resolve) => models.listen(0, '127.0.0.1', resolve));
  modelsUrl = `http://127.0.0.1:${(models.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise((resolve) => squatter.close(resolve));
  await new Promise((resolve) => models.close(resolve));
  rmSync(copy, { recursive: true, force: true });
});
beforeEach(() => {
  rmSync(join(copy, '.env'), { force: true });
  rmSync(join(copy, '.data'), { recursive: true, force: true });
});

/** Starts a command in the copy; its output so far (stdout and stderr) and its exit. */
function run(command: string, args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(command, args, {
    cwd: copy,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killOnExit = () => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve)).finally(() => process.removeListener('exit', killOnExit));
  return { child, output: () => output, exited };
}

/** Runs start.sh in the copy to its exit; its output (stdout and stderr). */
async function startScript(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; output: string }> {
  const [redisPort, mongoPort] = [await findFreePort(), await findFreePort()];
  const started = run('bash', ['scripts/start.sh', ...args], {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    MONGODB_URI: `mongodb://127.0.0.1:${mongoPort}/wa-assistant`,
    ...env,
  });
  const code = await started.exited;
  return { code, output: started.output() };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const nothingStarted = (output: string) => {
  expect(output).not.toMatch(/redis-server on|FerretDB on|building/);
  expect(existsSync(join(copy, '.data', 'redis.pid'))).toBe(false);
  expect(existsSync(join(copy, 'dist'))).toBe(false);
};

describe('scripts/start.sh', () => {
  test("Anthropic's key alone: a .env with Anthropic's lists; a taken port stops it with one line, nothing started", async () => {
    const { code, output } = await startScript({
      ANTHROPIC_API_KEY: 'sk-ant-start-script',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/v1',
      PORT: String(takenPort),
    });
    const env = readFileSync(join(copy, '.env'), 'utf8');
    expect(env).toMatch(/^ANTHROPIC_API_KEY=sk-ant-start-script$/m);
    expect(env).toMatch(/^MODEL_FAST=anthropic:claude-haiku-4-5$/m);
    expect(env).toMatch(/^MODEL_SMART=anthropic:claude-sonnet-4-5$/m);
    expect(env).toMatch(/^# OPENAI_API_KEY=/m);
    expect(output).toContain('start: wrote .env for Anthropic (ANTHROPIC_API_KEY)');
    expect(code).toBe(1);
    expect(output).toContain(`start: port ${takenPort} is already in use by another program: stop it, or set PORT to a free port`);
    nothingStarted(output);
  }, 60_000);

  test("an OpenAI-compatible server's URL alone: its first listed model in both lists", async () => {
    const { code, output } = await startScript({ OPENAI_BASE_URL: modelsUrl, PORT: String(takenPort) });
    const env = readFileSync(join(copy, '.env'), 'utf8');
    expect(env).toMatch(new RegExp(`^OPENAI_BASE_URL=${modelsUrl}$`, 'm'));
    expect(env).toMatch(/^MODEL_FAST=openai:llama3\.1:8b$/m);
    expect(env).toMatch(/^MODEL_SMART=openai:llama3\.1:8b$/m);
    expect(env).toMatch(/^OPENAI_API_KEY=\S+$/m);
    expect(output).toContain('start: using llama3.1:8b, the first model');
    expect(code).toBe(1);
    nothingStarted(output);
  }, 60_000);

  test('no provider at all, no terminal: one line naming the four ways, no .env', async () => {
    const { code, output } = await startScript({ PORT: String(takenPort) });
    expect(code).toBe(1);
    expect(output).toContain('start: give one model provider: OPENAI_API_KEY=sk-…, ANTHROPIC_API_KEY=…');
    expect(existsSync(join(copy, '.env'))).toBe(false);
  }, 60_000);

  test('a configuration error is reported before any store or build', async () => {
    writeFileSync(join(copy, '.env'), 'PUBLIC_BASE_URL=http://localhost:3000\nOPENAI_API_KEY=sk-x\nWIDGET_TOKEN_SECRET=short\n');
    const { code, output } = await startScript({});
    expect(code).toBe(1);
    expect(output).toMatch(/start: invalid configuration: .*WIDGET_TOKEN_SECRET/);
    expect(output).toContain('nothing was started');
    nothingStarted(output);
  }, 60_000);

  test('a variable on the command line wins over .env, and the script says so once', async () => {
    writeFileSync(join(copy, '.env'), `PUBLIC_BASE_URL=http://localhost:3000\nOPENAI_API_KEY=sk-x\nWIDGET_TOKEN_SECRET=${'s'.repeat(40)}\nPORT=3999\n`);
    const { code, output } = await startScript({ PORT: String(takenPort) });
    expect(output.match(/PORT from the command line wins over the value in \.env/g)).toHaveLength(1);
    // The command line's port is the one checked.
    expect(output).toContain(`start: port ${takenPort} is already in use`);
    expect(code).toBe(1);
  }, 60_000);

  test('Ollama not running: says nothing listens at that address and how to start Ollama; no .env, nothing started', async () => {
    const closed = `http://127.0.0.1:${await findFreePort()}/v1`;
    const { code, output } = await startScript({ OPENAI_BASE_URL: closed, PORT: String(takenPort) });
    expect(code).toBe(1);
    expect(output).toContain(`start: nothing listens at ${closed} (OPENAI_BASE_URL): start the server (Ollama: \`ollama serve\`) or fix OPENAI_BASE_URL`);
    expect(output).not.toContain('lists no model');
    expect(existsSync(join(copy, '.env'))).toBe(false);
    nothingStarted(output);
  }, 60_000);

  test('a model named while Ollama is not running: .env is written, and the model check names the server by its URL, /v1 included', async () => {
    const closed = `http://127.0.0.1:${await findFreePort()}/v1`;
    const named = { MODEL_FAST: 'openai:llama3.1:8b', MODEL_SMART: 'openai:llama3.1:8b' };
    const { code, output } = await startScript({ OPENAI_BASE_URL: closed, ...named, PORT: String(takenPort) });
    expect(code).toBe(1);
    expect(output).toContain('start: wrote .env for the OpenAI-compatible server');
    expect(readFileSync(join(copy, '.env'), 'utf8')).toMatch(/^MODEL_FAST=openai:llama3\.1:8b$/m);
    // The check start.sh runs in the background, with the environment it gives the service.
    const check = run(process.execPath, ['--import', 'tsx', 'scripts/model-check.ts'], {
      NODE_ENV: 'development',
      PUBLIC_BASE_URL: 'http://localhost:3000',
      WIDGET_TOKEN_SECRET: 's'.repeat(40),
      OPENAI_API_KEY: 'no-key-needed',
      OPENAI_BASE_URL: closed,
      ...named,
    });
    expect(await check.exited).toBe(0);
    expect(check.output().trim().split('\n')).toEqual([
      `note: nothing listens at ${closed} (OPENAI_BASE_URL): start the server (Ollama: \`ollama serve\`) or fix OPENAI_BASE_URL`,
    ]);
  }, 60_000);

  test("PORT on the command line: .env's local PUBLIC_BASE_URL follows it, said once; the taken-port advice says so", async () => {
    writeFileSync(join(copy, '.env'), `PUBLIC_BASE_URL=http://localhost:3000\nOPENAI_API_KEY=sk-x\nWIDGET_TOKEN_SECRET=${'s'.repeat(40)}\n`);
    const { code, output } = await startScript({ PORT: String(takenPort) });
    expect(output.match(/PUBLIC_BASE_URL follows PORT/g)).toHaveLength(1);
    expect(output).toContain(`start: PUBLIC_BASE_URL follows PORT: http://localhost:${takenPort}`);
    expect(output).toContain('a local PUBLIC_BASE_URL follows it');
    expect(code).toBe(1);
    // One given on the command line is left as given.
    const given = await startScript({ PORT: String(takenPort), PUBLIC_BASE_URL: 'http://localhost:3000' });
    expect(given.output).not.toContain('PUBLIC_BASE_URL follows PORT');
  }, 60_000);
});

describe('scripts/start.sh --stop', () => {
  let start: ReturnType<typeof run> | undefined;
  afterAll(async () => {
    // A start still running (the test failed) ends its own way: its build step and stores with it.
    if (start && start.child.exitCode === null && start.child.signalCode === null) {
      start.child.kill('SIGTERM');
      await start.exited;
    }
    await startScript({}, ['--stop']);
  }, 120_000);

  test('while a start runs: that start is stopped first (its own stores with it), said so; then nothing is left to stop', async () => {
    writeFileSync(join(copy, '.env'), `PUBLIC_BASE_URL=http://localhost:3000\nOPENAI_API_KEY=sk-x\nWIDGET_TOKEN_SECRET=${'s'.repeat(40)}\n`);
    const [port, redisPort, mongoPort] = [await findFreePort(), await findFreePort(), await findFreePort()];
    start = run('bash', ['scripts/start.sh'], {
      ...(process.env.FERRETDB_BIN ? { FERRETDB_CACHE_DIR: join(process.env.FERRETDB_BIN, '..') } : {}),
      PORT: String(port),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MONGODB_URI: `mongodb://127.0.0.1:${mongoPort}/wa-assistant`,
    });
    // Its stores are up (it builds next).
    await eventually(() => /start: FerretDB on/.test(start!.output()) || undefined, 120_000).catch((error: unknown) => {
      throw new Error(`${String(error)}; start.sh said:\n${start!.output()}`);
    });
    const redisPid = Number(readFileSync(join(copy, '.data', 'redis.pid'), 'utf8'));
    const startPid = start.child.pid ?? 0;

    const stop = await startScript({}, ['--stop']);
    expect(stop.code).toBe(0);
    expect(stop.output).toContain(`start: the service is running (bash scripts/start.sh, pid ${startPid}): stopping it first, then the stores it started`);
    expect(stop.output).toContain(`start: stopped the service (pid ${startPid}) and its stores`);
    expect(await start.exited).not.toBeNull();
    expect(start.output()).toContain('start: stopped redis');
    expect(alive(redisPid)).toBe(false);

    const again = await startScript({}, ['--stop']);
    expect(again.code).toBe(0);
    expect(again.output.trim()).toBe('start: nothing to stop: no service, Redis or FerretDB started by this script is running');
  }, 240_000);
});
