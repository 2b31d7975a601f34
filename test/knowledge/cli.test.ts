/**
 * `npm run knowledge`: the operator API from a terminal, run as its own process on the service's
 * configuration (REDIS_URL, MONGODB_URI). A file becomes a document (checked by its content), a
 * URL a source crawled at once; `list`, `remove` and `crawl` do what the admin routes do; a
 * worker running meanwhile (this test's rig) hears of each change through the change stream.
 * Bad input: exit 1 and one line; a usage error: exit 2.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHelpCenterSite, type HelpCenterSite } from '../support/help-center-site.js';
import { testEnv } from '../support/harness.js';
import { knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';
import { textPdf } from '../support/text-pdf.js';
import { RUN_TS } from '../support/run-ts.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('npm run knowledge', () => {
  let rig: KnowledgeRig;
  let site: HelpCenterSite;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    const redisUrl = await ownKnowledgeRedisUrl();
    const mongoUri = knowledgeMongoUri();
    rig = await startKnowledgeRig({ redisUrl, mongoUri });
    site = await startHelpCenterSite();
    env = testEnv('http://127.0.0.1:9', { REDIS_URL: redisUrl, MONGODB_URI: mongoUri, LOG_LEVEL: 'warn' });
    dir = await mkdtemp(join(tmpdir(), 'knowledge-cli-'));
  });
  afterAll(async () => {
    await rig?.close();
    await site?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const knowledge = (...args: string[]) =>
    new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, [...RUN_TS, 'scripts/knowledge.ts', ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  const file = async (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  };
  const titles = async (query: string) => (await rig.feature.retrieve(query, { channel: 'whatsapp' })).map((passage) => passage.title);
  const until = async (check: () => Promise<boolean>, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it('adds a Markdown file and a PDF as documents that a running worker finds, lists them, removes one', async () => {
    const markdown = await file('boards.md', '# Surfboard rental\n\nBoards rent for 25 euros a day, wetsuits included.\n');
    const added = await knowledge('add', markdown, '--title', 'Surfboard rental');
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    const [, id] = /^added document (doc_[0-9a-f]{16}) \(markdown, 1 passages\)\n$/.exec(added.stdout) ?? [];
    expect(id).toBeDefined();
    // The worker (another process's index) hears of it through the change stream.
    await until(async () => (await titles('surfboard rental price')).includes('Surfboard rental'));

    const pdf = await file('lockers.bin', textPdf(['Locker hire', 'Lockers at the beach hut cost 3 euros per day.']));
    const fromPdf = await knowledge('add', pdf, '--title', 'Locker hire', '--sites', 'brand-a');
    expect(fromPdf.code).toBe(0);
    expect(fromPdf.stdout).toMatch(/^added document doc_[0-9a-f]{16} \(pdf, \d+ passages\)\n$/);

    const listed = await knowledge('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('documents and FAQ (2)');
    expect(listed.stdout).toMatch(new RegExp(`${id}  document  Surfboard rental  1 passages`));

    const removed = await knowledge('remove', id!);
    expect(removed).toMatchObject({ code: 0, stdout: `removed ${id}\n` });
    await until(async () => !(await titles('surfboard rental price')).includes('Surfboard rental'));
  }, 90_000);

  it('adds a website as a source and crawls it now; crawl <id> crawls it again', async () => {
    const added = await knowledge('add', `${site.origin}/`);
    expect(added.code).toBe(0);
    const [, sourceId] = /^added source (src_[0-9a-f]{16}) /.exec(added.stdout) ?? [];
    expect(sourceId).toBeDefined();
    const report = JSON.parse(added.stdout.split('\n')[1]!) as { pages: number };
    expect(report.pages).toBeGreaterThan(2);
    await until(async () => (await titles('return policy refund')).length > 0);

    const again = await knowledge('crawl', sourceId!);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout) as object).toHaveProperty('pages');
    expect((await knowledge('list')).stdout).toContain(`${sourceId}  ${site.origin}/`);
  }, 90_000);

  it('refuses bad input with exit 1 and one line, a usage error with exit 2', async () => {
    const fakePdf = await file('fake.pdf', 'just text pretending to be a PDF');
    const binary = await file('notes.txt', Buffer.from([0x41, 0x00, 0x42, 0x43]));
    const cases: [string[], RegExp][] = [
      [[fakePdf], /PDF/i],
      [[binary], /binary/],
      [[join(dir, 'missing.md')], /^no such file: .*missing\.md/],
      [['remove', 'faq_0123456789abcdef'], /^unknown faq item: faq_0123456789abcdef$/],
      [['remove', 'nonsense'], /^not a knowledge id: nonsense/],
      [['crawl', 'src_0123456789abcdef'], /^unknown source: src_0123456789abcdef$/],
      [['add', 'ftp://example.test/'], /no such file/],
    ];
    for (const [args, message] of cases) {
      const run = await knowledge(...(args.length === 1 ? ['add', ...args] : args));
      expect(run.code).toBe(1);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(message);
      expect(run.stdout).toBe('');
    }
    const usage = await knowledge('frobnicate');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: npm run knowledge -- add <url|file>');
  }, 120_000);
});
