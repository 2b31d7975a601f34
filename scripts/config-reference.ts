/**
 * Writes docs/configuration.md, the reference of every environment variable, from the two places
 * that define them: the zod schema in src/config.ts, put together from its sections in src/config/
 * (names, whether required, defaults), and the comments of .env.example (what each one means,
 * grouped in its sections).
 *
 *   node --import tsx scripts/config-reference.ts          # rewrites docs/configuration.md
 *   node --import tsx scripts/config-reference.ts --check  # exits 1 when it is stale or a variable is undocumented
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EnvSchema } from '../src/config.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const target = `${root}docs/configuration.md`;

interface Entry {
  names: string[];
  comment: string[];
}
interface Section {
  title: string;
  entries: Entry[];
}

/** .env.example as sections of variable groups, each with the comment block above it. */
function readExample(text: string): Section[] {
  const sections: Section[] = [];
  let comment: string[] = [];
  let current: Section | undefined;
  let group: Entry | undefined;
  for (const line of text.split('\n')) {
    const heading = /^# --- (.+?) -*$/.exec(line);
    const variable = /^(?:# )?([A-Z][A-Z0-9_]+)=/.exec(line);
    if (heading) {
      current = { title: heading[1]!.trim(), entries: [] };
      sections.push(current);
      comment = [];
      group = undefined;
    } else if (variable && current) {
      if (comment.length > 0 || !group) {
        group = { names: [], comment };
        current.entries.push(group);
        comment = [];
      }
      group.names.push(variable[1]!);
    } else if (line.startsWith('#') && current) {
      comment.push(line.replace(/^# ?/, ''));
      group = undefined;
    } else if (line.trim() === '') {
      group = undefined;
    }
  }
  return sections;
}

const shape = EnvSchema.shape as Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }>;

function defaultOf(name: string): string {
  const field = shape[name];
  if (!field) return 'no longer used';
  const parsed = field.safeParse(undefined);
  if (!parsed.success) return '**required**';
  if (parsed.data === undefined) return 'unset';
  const value = Array.isArray(parsed.data) ? parsed.data.join(',') : String(parsed.data);
  return `\`${value}\``;
}

const cell = (text: string) => text.replace(/\|/g, '\\|');

function render(example: string): { markdown: string; problems: string[] } {
  const sections = readExample(example);
  const documented = new Set(sections.flatMap((section) => section.entries.flatMap((entry) => entry.names)));
  const problems = Object.keys(shape)
    .filter((name) => !documented.has(name))
    .map((name) => `${name} is in the schema (src/config.ts) but not in .env.example`);
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
    lines.push(`## ${section.title}`, '', '| Variable | Default | What it does |', '|---|---|---|');
    for (const entry of section.entries) {
      const names = entry.names.map((name) => `\`${name}\``).join('<br>');
      const defaults = entry.names.map(defaultOf).join('<br>');
      lines.push(`| ${names} | ${defaults} | ${cell(entry.comment.join(' ').replace(/\s+/g, ' ').trim())} |`);
    }
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
