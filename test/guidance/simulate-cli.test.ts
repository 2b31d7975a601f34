/**
 * `npm run simulate`: a scenarios file run from a terminal on the service's configuration and
 * models (here the OpenAI-compatible stub standing in for a real model key): each scenario's
 * conversation and verdicts printed, exit 0 when all passed, 1 with the failing criterion and its
 * reason, 2 on a usage error.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schemaDefault, type JsonSchema } from '../support/deterministic-model.js';
import { testEnv } from '../support/harness.js';
import { startOpenAIStub, type ChatCompletionRequestBody, type OpenAIStub } from '../support/openai-stub.js';
import { RUN_TS } from '../support/run-ts.js';

const textOf = (body: ChatCompletionRequestBody) =>
  body.messages.map((message) => (typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? ''))).join('\n');

describe('npm run simulate', () => {
  let stub: OpenAIStub;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    stub = await startOpenAIStub();
    // The customer asks once; the assistant answers; the judge routes; the grader fails only a refund criterion.
    stub.respondWith((body) => {
      const text = textOf(body);
      const schema = body.response_format?.json_schema?.schema as JsonSchema | undefined;
      if (schema?.properties?.verdicts) {
        const criteria = [...text.matchAll(/^\d+\. (.*)$/gm)].map((match) => match[1] ?? '');
        return {
          json: {
            verdicts: criteria.map((criterion) =>
              /refund/.test(criterion) ? { passed: false, reason: 'No refund was offered.' } : { passed: true, reason: 'It was answered.' },
            ),
          },
        };
      }
      if (schema) return { json: schemaDefault(schema) };
      if (text.includes('You play a customer')) return { text: text.includes('Customer:') ? 'END' : 'Hello, are you open on Sundays?' };
      return { text: 'Yes, from 10 to 4.' };
    });
    dir = await mkdtemp(join(tmpdir(), 'simulate-cli-'));
    env = testEnv('http://127.0.0.1:9', { OPENAI_BASE_URL: stub.baseUrl, LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await stub?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const simulate = async (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [...RUN_TS, 'scripts/simulate.ts', ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  const scenarios = async (name: string, criteria: string[]) => {
    const path = join(dir, `${name}.json`);
    await writeFile(path, JSON.stringify([{ name, persona: 'A customer who wants to know the Sunday opening hours.', criteria, maxTurns: 2 }]));
    return path;
  };

  it('prints the conversation and verdicts; exit 0 when every scenario passed, 1 with the reason when one failed', async () => {
    const passed = await simulate(await scenarios('sunday', ['is told the Sunday hours']));
    expect(passed).toMatchObject({ code: 0, stderr: '' });
    expect(passed.stdout).toBe(
      [
        'PASS sunday (draft)',
        '  customer: Hello, are you open on Sundays?',
        '  assistant: Yes, from 10 to 4.',
        '  ✓ is told the Sunday hours — It was answered.',
        '',
      ].join('\n'),
    );
    const failed = await simulate(await scenarios('refund', ['is offered a refund']));
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('FAIL refund (draft)');
    expect(failed.stdout).toContain('  ✗ is offered a refund — No refund was offered.');
  }, 60_000);

  it('refuses a bad file with one line, and a bad command with the usage', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, JSON.stringify([{ name: 'x', persona: 'short', criteria: [] }]));
    const bad = await simulate(path);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^invalid scenarios: /);
    expect((await simulate()).code).toBe(2);
    expect((await simulate(path, '--against', 'tomorrow')).code).toBe(2);
  }, 60_000);
});
