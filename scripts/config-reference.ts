/**
 * Writes docs/configuration.md, the reference of every environment variable, from the two places
 * that define them: the zod schema in src/config.ts, put together from its sections in src/config/
 * (names, whether required, defaults), and the comments of .env.example (what each one means,
 * grouped in its sections).
 *
 * In .env.example each variable has the comment block right above it as its own description; a
 * variable line right after another has none, and the check fails. Within a section, a comment
 * paragraph that ends in a bare `#` line (or a blank line) is the section's introduction, shown
 * above its table. The check also fails on a variable the schema has and .env.example lacks, one
 * .env.example names and the schema does not read (a named compatible server's
 * OPENAI_COMPATIBLE_<NAME>_* aside), and one described as no longer used that still has a default.
 *
 *   node --import tsx scripts/config-reference.ts          # rewrites docs/configuration.md
 *   node --import tsx scripts/config-reference.ts --check  # exits 1 when it is stale or a variable is wrong
 *   ... --root <dir>                                       # reads <dir>/.env.example, writes <dir>/docs/ (tests)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvSchema } from '../src/config.js';

const rootArgument = process.argv.indexOf('--root');
const root = rootArgument > 0 ? `${resolve(process.argv[rootArgument + 1] ?? '.')}/` : fileURLToPath(new URL('..', import.meta.url));
const target = `${root}docs/configuration.md`;

/** `OPENAI_COMPATIBLE_<NAME>_BASE_URL` / `_API_KEY`: read by src/config.ts for any NAME. */
const PATTERN_VARIABLE = /^OPENAI_COMPATIBLE_[A-Z0-9_]+?_(BASE_URL|API_KEY)$/;

interface Entry {
  name: string;
  comment: string[];
}
interface Section {
  title: string;
  intro: string[];
  entries: Entry[];
}

/** .env.example as sections: their introductions and each variable with the comment above it. */
function readExample(text: string, problems: string[]): Section[] {
  const sections: Section[] = [];
  let comment: string[] = [];
  let current: Section | undefined;
  for (const line of text.split('\n')) {
    const heading = /^# --- (.+?) -*$/.exec(line);
    const variable = /^(?:# )?([A-Z][A-Z0-9_]+)=/.exec(line);
    if (heading) {
      current = { title: heading[1]!.trim(), intro: [], entries: [] };
      sections.push(current);
      comment = [];
    } else if (variable && current) {
      if (comment.length === 0) problems.push(`${variable[1]} has no description of its own in .env.example (a comment line right above it)`);
      current.entries.push({ name: variable[1]!, comment });
      comment = [];
    } else if (line.trim() === '#' || line.trim() === '') {
      // A paragraph that ends here, not on a variable, introduces the section.
      if (current && comment.length > 0) current.intro.push(comment.join(' '));
      comment = [];
    } else if (line.startsWith('#') && current) {
      comment.push(line.replace(/^# ?/, ''));
    }
  }
  return sections;
}
const shape = EnvSchema.shape as Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }>;

function defaultOf(name: string): string {
  const field = shape[name];
  if (!field) return 'unset';
  const parsed = field.safeParse(undefined);
  if (!parsed.success) return '**required**';
  if (parsed.data === undefined) return 'unset';
  const value = Array.isArray(parsed.data) ? parsed.data.join(',') : String(parsed.data);
  return `\`${value}\``;
}

const cell = (text: string) => text.replace(/\|/g, '\\|');
const prose = (lines: readonly string[]) => lines.join(' ').replace(/\s+/g, ' ').trim();

function render(example: string): { markdown: string; problems: string[] } {
  const problems: string[] = [];
  const sections = readExample(example, problems);
  const documented = new Set(sections.flatMap((section) => section.entries.map((entry) => entry.name)));
  for (const name of Object.keys(shape)) if (!documented.has(name)) problems.push(`${name} is in the schema (src/config.ts) but not in .env.example`);
  for (const name of documented) {
    if (!shape[name] && !PATTERN_VARIABLE.test(name)) problems.push(`.env.example names ${name}, which src/config.ts does not read`);
  }
  for (const entry of sections.flatMap((section) => section.entries)) {
    if (/^no longer used/i.test(prose(entry.comment)) && !['unset', '**required**'].includes(defaultOf(entry.name))) {
      problems.push(`${entry.name} is described as no longer used, but src/config.ts gives it a default (${defaultOf(entry.name)})`);
    }
  }
  const lines = [
    '# Configuration',
    '',
    'Every setting is an environment variable, read once at start-up by the zod schema in',
    '`src/config.ts`; a missing or invalid one stops the service with one line naming it. Empty',
    'values count as unset. `.env.example` holds the same list with examples; this page is generated',
    'from the two (`node --import tsx scripts/config-reference.ts`), and CI fails when it is stale.',
    '',
  ];
  for (const section of sections) {
    lines.push(`## ${section.title}`, '');
    for (const paragraph of section.intro) lines.push(paragraph.replace(/\s+/g, ' ').trim(), '');
    lines.push('| Variable | Default | What it does |', '|---|---|---|');
    for (const entry of section.entries) lines.push(`| \`${entry.name}\` | ${defaultOf(entry.name)} | ${cell(prose(entry.comment))} |`);
    lines.push('');
  }
  return { markdown: lines.join('\n'), problems };
}

const { markdown, problems } = render(readFileSync(`${root}.env.example`, 'utf8'));
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    problems.push('docs/configuration.md is missing');
  }
  if (current && current !== markdown) problems.push('docs/configuration.md is stale: run node --import tsx scripts/config-reference.ts');
  for (const problem of problems) process.stderr.write(`config-reference: ${problem}\n`);
  process.exit(problems.length > 0 ? 1 : 0);
}
for (const problem of problems) process.stderr.write(`config-reference: ${problem}\n`);
writeFileSync(target, markdown);
process.exit(problems.length > 0 ? 1 : 0);
