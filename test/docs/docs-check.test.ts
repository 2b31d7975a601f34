/**
 * `npm run docs:check` (part of `npm run check`) fails on each kind of docs error an operator
 * once found: a variable in .env.example with no description of its own (so it would carry a
 * neighbour's), one the schema does not read, one described as no longer used that still shows a
 * default; a section named in words instead of linked; an internal work-item number. Each case
 * runs the real scripts over a small copy of the documents (`--root`), and the project's own
 * documents pass.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { RUN_TS } from '../support/run-ts.js';

const root = process.cwd();
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function run(script: string, args: string[]): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [...RUN_TS, `scripts/${script}`, ...args], { cwd: root, encoding: 'utf8' });
  return { status: result.status, stderr: result.stderr };
}

/** A directory holding the project's .env.example with `change` applied (and its generated reference). */
function exampleWith(change: (text: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'docs-check-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'docs'));
  writeFileSync(join(dir, '.env.example'), change(readFileSync(join(root, '.env.example'), 'utf8')));
  return dir;
}

/** A directory with README.md and docs/a.md (heading "Memory") holding `line`. */
function documentsWith(line: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'docs-links-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'docs'));
  writeFileSync(join(dir, 'README.md'), '# Title\n\nSee [a](docs/a.md).\n');
  writeFileSync(join(dir, 'docs', 'a.md'), `# A\n\n## Memory\n\n${line}\n`);
  return dir;
}

describe('the configuration reference', () => {
  test("the project's .env.example and docs/configuration.md pass", () => {
    expect(run('config-reference.ts', ['--check'])).toEqual({ status: 0, stderr: '' });
  });

  test('a variable right under another (no description of its own) fails', () => {
    const dir = exampleWith((text) => text.replace("# Google's Gemini API key. Needed only when a list names google:<model>. Default: unset.\n", ''));
    const { status, stderr } = run('config-reference.ts', ['--root', dir]);
    expect(status).toBe(1);
    expect(stderr).toContain('GOOGLE_GENERATIVE_AI_API_KEY has no description of its own');
  });

  test('a variable the schema does not read fails; a named compatible server does not', () => {
    const dir = exampleWith(
      (text) => `${text}# Something removed long ago.\n# SOMETHING_GONE=1\n# A named server.\n# OPENAI_COMPATIBLE_VLLM_BASE_URL=http://127.0.0.1:8000/v1\n`,
    );
    const { status, stderr } = run('config-reference.ts', ['--root', dir]);
    expect(status).toBe(1);
    expect(stderr).toContain('.env.example names SOMETHING_GONE, which src/config.ts does not read');
    expect(stderr).not.toContain('OPENAI_COMPATIBLE_VLLM_BASE_URL');
    // A named server's variable is shown as what it is: unset until set, never "no longer used".
    expect(readFileSync(join(dir, 'docs', 'configuration.md'), 'utf8')).toMatch(/\| `OPENAI_COMPATIBLE_VLLM_BASE_URL` \| unset \|/);
  });

  test('a variable described as no longer used that still has a default fails', () => {
    const dir = exampleWith((text) => text.replace('# Turns one worker process runs at once. Default: 32.', '# No longer used.'));
    const { status, stderr } = run('config-reference.ts', ['--root', dir]);
    expect(status).toBe(1);
    expect(stderr).toContain('WORKER_CONCURRENCY is described as no longer used, but src/config.ts gives it a default (`32`)');
  });

  test('each variable has its own description in the generated page', () => {
    const page = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
    const rows = page.split('\n').filter((line) => line.startsWith('| `'));
    const descriptions = rows.map((row) => row.split(' | ')[2]);
    expect(new Set(descriptions).size).toBe(descriptions.length);
    expect(page).toMatch(/\| `ANTHROPIC_API_KEY` \| unset \| Anthropic's key/);
  });
});

describe('the link check', () => {
  test("the project's documents pass", () => {
    expect(run('check-links.ts', []).status).toBe(0);
  });

  test.each([
    ['a section named in words', 'Size it as "Memory" below says.'],
    ['a README section in words', 'See README "Actions".'],
    ["another document's section in words", 'Set it as a.md, "Memory" says.'],
    ['a quoted see-reference', 'It is bounded (see "Memory").'],
    ['a link to a heading that does not exist', 'See [memory](#memory-use).'],
    ['an internal work-item number', 'Decided in issue 22.'],
  ])('%s fails', (_kind, line) => {
    const { status, stderr } = run('check-links.ts', ['--root', documentsWith(line)]);
    expect(status).toBe(1);
    expect(stderr).toContain('docs/a.md:5');
  });

  test('the same, written as a link that resolves, passes', () => {
    expect(run('check-links.ts', ['--root', documentsWith('Size it as [memory](#memory) says.')]).status).toBe(0);
  });
});
