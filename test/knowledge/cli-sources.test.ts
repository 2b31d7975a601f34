/**
 * `npm run knowledge -- add <url>` with a website that cannot be crawled: a URL with a user name
 * and password, or plain http to a host other than loopback, is refused before anything is added
 * (exit 1, one line naming why, the password never printed or logged); a host DNS does not know
 * and a robots.txt answering 503 are added, their crawl fails (exit 1, one line with the cause),
 * and `list` shows the cause next to the source.
 */
import { spawn } from 'node:child_process';
import { startHelpCenterSite, type HelpCenterSite } from '../support/help-center-site.js';
import { testEnv } from '../support/harness.js';
import { knowledgeMongoUri, ownKnowledgeRedisUrl } from '../support/knowledge-rig.js';
import { RUN_TS } from '../support/run-ts.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('npm run knowledge -- add <url> that cannot be crawled', () => {
  let site: HelpCenterSite;
  let env: Record<string, string>;

  beforeAll(async () => {
    site = await startHelpCenterSite();
    env = testEnv('http://127.0.0.1:9', { REDIS_URL: await ownKnowledgeRedisUrl(), MONGODB_URI: knowledgeMongoUri(), LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await site?.close();
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

  it('refuses a URL with a password, or plain http to another host, with one line and nothing added', async () => {
    const secret = await knowledge('add', 'https://owner:hunter2@help.example.com/');
    expect(secret).toEqual({ code: 1, stdout: '', stderr: 'invalid source: url: a source URL cannot carry a user name or password: the crawl sends none\n' });
    const plain = await knowledge('add', 'http://10.0.0.5/help');
    expect(plain).toEqual({ code: 1, stdout: '', stderr: 'invalid source: url: expected https: plain http is read from a loopback test server only\n' });
    const listed = await knowledge('list');
    expect(listed.stdout).toContain('sources (0)');
  });

  it('says why a crawl failed (DNS, robots.txt) and lists the cause with the source', async () => {
    const unknown = await knowledge('add', 'https://help.nowhere.invalid/');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("crawl failed: robots.txt could not be read (host not found (DNS)): the last crawl's pages are kept\n");

    site.setStatus('/robots.txt', 503);
    const outage = await knowledge('add', `${site.origin}/`);
    expect(outage.code).toBe(1);
    expect(outage.stderr).toBe("crawl failed: robots.txt could not be read (answered 503): the last crawl's pages are kept\n");

    const listed = await knowledge('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /https:\/\/help\.nowhere\.invalid\/ {2}0 pages {2}last crawl \S+ failed {2}1 errors, first: robots\.txt could not be read \(host not found \(DNS\)\)/,
    );
    expect(listed.stdout).toContain('robots.txt could not be read (answered 503)');
  });
});
