/**
 * `npm run chat` when it can't answer, as a developer sees it in the terminal: with the stores
 * not running it says so in one line (naming what to start) and exits, with no connection errors
 * printed; with the model unreachable each message gets one line naming the cause and what to do
 * (the same cause once the circuit breaker is open), no stack trace, and the chat goes on.
 */
import { spawn } from 'node:child_process';
import { describe, expect, test } from '@jest/globals';
import { eventually, ownRedisDatabase, testEnv } from '../support/harness.js';
import { RUN_TS } from '../support/run-ts.js';
import { findFreePort } from '../support/services.js';

function startChat(env: Record<string, string>) {
  const child = spawn(process.execPath, [...RUN_TS, 'src/chat.ts'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, exited, output: () => output };
}

describe('npm run chat when it cannot answer', () => {
  test('the stores not running: one line naming them and saying to start the service, exit 1', async () => {
    const [redisPort, mongoPort] = [await findFreePort(), await findFreePort()];
    const chat = startChat(
      testEnv('http://127.0.0.1:9', { REDIS_URL: `redis://127.0.0.1:${redisPort}`, MONGODB_URI: `mongodb://127.0.0.1:${mongoPort}/chat` }),
    );
    try {
      expect(await chat.exited).toBe(1);
      expect(chat.output().trim().split('\n')).toEqual([
        `chat: Redis at redis://127.0.0.1:${redisPort} (REDIS_URL) and MongoDB at mongodb://127.0.0.1:${mongoPort}/chat (MONGODB_URI) do not answer. ` +
          "npm run chat uses the service's Redis and MongoDB: start the service first (bash scripts/start.sh, in another terminal), or point REDIS_URL / MONGODB_URI in .env at yours",
      ]);
    } finally {
      chat.child.kill('SIGKILL');
    }
  }, 60_000);

  test('the model unreachable: one line per message naming the cause, breaker open or not; no stack trace; the chat goes on', async () => {
    const modelPort = await findFreePort();
    const chat = startChat(
      testEnv('http://127.0.0.1:9', {
        // Its own database: the breaker it opens is shared through Redis.
        ...ownRedisDatabase(11),
        OPENAI_BASE_URL: `http://127.0.0.1:${modelPort}/v1`,
        MODEL_BREAKER_FAILURES: '1',
        USER: `dev${Date.now()}`,
      }),
    );
    const line = `chat: no answer from the model: nothing listens at http://127.0.0.1:${modelPort}/v1 (OPENAI_BASE_URL): start the server (Ollama: \`ollama serve\`) or fix OPENAI_BASE_URL; then send your message again`;
    const said = (count: number) => chat.output().split(line).length - 1 === count || undefined;
    try {
      await eventually(() => chat.output().includes('you ›') || undefined, 30_000);
      chat.child.stdin.write('hello?\n');
      await eventually(() => said(1), 60_000);
      // The breaker is open now: the next message names the same cause, not the breaker.
      chat.child.stdin.write('anyone there?\n');
      await eventually(() => said(2), 60_000);
      chat.child.stdin.write('/quit\n');
      expect(await chat.exited).toBe(0);
      expect(chat.output()).not.toMatch(/^\s+at /m);
      expect(chat.output()).not.toContain('ModelsUnavailableError');
      expect(chat.output()).not.toContain('circuit breaker');
    } finally {
      chat.child.kill('SIGKILL');
    }
  }, 120_000);
});
