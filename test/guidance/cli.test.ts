/**
 * `npm run guidance`: the business's guidance from a terminal, run as its own process on the
 * service's configuration (REDIS_URL, MONGODB_URI). `add` writes the draft, `publish` and
 * `rollback` make a version live in a worker running meanwhile (this test's rig) through the
 * change stream, `list` shows it all; bad input: exit 1 and one line; a usage error: exit 2.
 */
import { spawn } from 'node:child_process';
import { testEnv } from '../support/harness.js';
import { startGuidanceRig, type GuidanceRig } from '../support/guidance-rig.js';
import { knowledgeMongoUri, ownKnowledgeRedisUrl } from '../support/knowledge-rig.js';
import { RUN_TS } from '../support/run-ts.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('npm run guidance', () => {
  let rig: GuidanceRig;
  let env: Record<string, string>;

  beforeAll(async () => {
    const redisUrl = await ownKnowledgeRedisUrl();
    const mongoUri = knowledgeMongoUri();
    rig = await startGuidanceRig({ redisUrl, mongoUri });
    env = testEnv('http://127.0.0.1:9', { REDIS_URL: redisUrl, MONGODB_URI: mongoUri, LOG_LEVEL: 'warn' });
  });
  afterAll(async () => rig?.close());

  const guidance = (...args: string[]) =>
    new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, [...RUN_TS, 'scripts/guidance.ts', ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  const quoted = () => rig.feature.turn.brief({ roleId: 'sales', channel: 'whatsapp', site: undefined, contact: undefined, applying: [] }).section ?? '';
  const until = async (check: () => boolean, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    return check();
  };

  it('adds, publishes, lists and rolls back, reaching a running worker', async () => {
    const added = await guidance('add', '--category', 'policy', '--text', 'Never promise a delivery date.', '--channels', 'whatsapp');
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const id = /added (g_[0-9a-f]{12})/.exec(added.stdout)?.[1] ?? '';
    expect(id).not.toBe('');
    expect(await guidance('publish')).toMatchObject({ code: 0, stdout: 'published version 1 (1 entries)\n' });
    expect(await until(() => quoted().includes('Never promise a delivery date.'))).toBe(true);

    expect((await guidance('remove', id)).code).toBe(0);
    expect((await guidance('add', '--category', 'style', '--text', 'Answer in two sentences.')).code).toBe(0);
    expect((await guidance('publish')).stdout).toBe('published version 2 (1 entries)\n');
    expect(await until(() => quoted().includes('two sentences') && !quoted().includes('delivery date'))).toBe(true);

    const list = await guidance('list');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('live: version 2 (1 entries');
    expect(list.stdout).toContain('versions: 1, 2');

    expect(await guidance('rollback', '1')).toMatchObject({ code: 0, stdout: "published version 3 with version 1's 1 entries\n" });
    expect(await until(() => quoted().includes('delivery date') && !quoted().includes('two sentences'))).toBe(true);
  }, 60_000);

  it('refuses bad input with one line, and a bad command with the usage', async () => {
    const bad = await guidance('add', '--category', 'tone', '--text', 'Be brief.');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^invalid entry: category/);
    const unknownRole = await guidance('add', '--category', 'style', '--text', 'Be brief.', '--roles', 'pirate');
    expect(unknownRole).toMatchObject({ code: 1 });
    expect(unknownRole.stderr).toContain('unknown role: pirate');
    expect(await guidance('rollback', '99')).toMatchObject({ code: 1, stderr: 'no published version 99\n' });
    const usage = await guidance('frobnicate');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: npm run guidance');
  }, 60_000);
});
