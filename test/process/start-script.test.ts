/**
 * `scripts/start.sh` before it starts anything: the first run writes a `.env` for whichever
 * provider the environment gives (Anthropic's key alone; an OpenAI-compatible server's URL alone,
 * taking the first model it lists), a configuration error or a taken port stops it with one line
 * before a store is started or a build is run, and a variable given on the command line wins
 * over `.env`, said once. Each run ends at the taken port (or the configuration), so nothing here
 * builds or reaches a provider: the only server asked is a loopback stub.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
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

/** Runs start.sh in the copy to its exit; its output (stdout and stderr). */
async function startScript(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const [redisPort, mongoPort] = [await findFreePort(), await findFreePort()];
  const child = spawn('bash', ['scripts/start.sh'], {
    cwd: copy,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MONGODB_URI: `mongodb://127.0.0.1:${mongoPort}/wa-assistant`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killOnExit = () => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  process.removeListener('exit', killOnExit);
  return { code, output };
}

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
});
