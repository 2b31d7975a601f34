/**
 * Checks every relative link in README.md, CHANGELOG.md and docs/ (recursively): the file it
 * names exists and, with a #fragment, has a heading of that GitHub anchor. Links to other sites
 * are not fetched (nothing here calls out). A section named in words instead of linked
 * (`see "Memory"`, `"Redis persistence" below`, `README "Actions"`, `observability.md, "Memory"`)
 * is broken too: it is written as a link, which is checked. In README.md and docs/, an internal
 * work-item number ("issue 11") is an error: they speak to operators. CHANGELOG.md's links are
 * checked, its wording is not (it records releases as written). Exits 1 listing each.
 *
 *   node --import tsx scripts/check-links.ts [--root <dir>]
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const rootArgument = process.argv.indexOf('--root');
const root = rootArgument > 0 ? resolve(process.argv[rootArgument + 1] ?? '.') : fileURLToPath(new URL('..', import.meta.url));

/** A section referred to in words, not by a link. */
const WORDED_REFERENCES = [/\b(?:README(?:\.md)?|[\w-]+\.md),? "[^"]+"/, /"[A-Z][^"]*" (?:below|above)\b/, /\bsee "[A-Z][^"]*"/i, /\(see (?:the )?"[^"]+"/i];
const WORK_ITEM = /\b[Ii]ssues? #?\d+\b/;

function markdownFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.+?)\s*#*$/.exec(line);
    if (!heading) continue;
    const base = anchorOf(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const files = ['README.md', 'CHANGELOG.md'].map((name) => join(root, name)).filter((path) => existsSync(path));
if (existsSync(join(root, 'docs'))) files.push(...markdownFiles(join(root, 'docs')));

const broken: string[] = [];
for (const file of files) {
  let fenced = false;
  for (const [index, line] of readFileSync(file, 'utf8').split('\n').entries()) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const where = `${relative(root, file)}:${index + 1}`;
    // CHANGELOG.md is a record of releases as they were written: links there are checked, wording is not.
    const history = relative(root, file) === 'CHANGELOG.md';
    const worded = history ? undefined : WORDED_REFERENCES.map((pattern) => pattern.exec(line)?.[0]).find(Boolean);
    if (worded) broken.push(`${where}: ${worded} (a section named in words: make it a link)`);
    const item = history ? null : WORK_ITEM.exec(line);
    if (item) broken.push(`${where}: "${item[0]}" (an internal work-item number: say what it is instead)`);
    for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const link = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
      const [path = '', fragment] = link.split('#');
      const targetFile = path === '' ? file : resolve(dirname(file), decodeURI(path));
      if (!existsSync(targetFile)) {
        broken.push(`${where}: ${link} (no such file)`);
        continue;
      }
      if (fragment && targetFile.endsWith('.md') && !anchors(targetFile).has(fragment)) broken.push(`${where}: ${link} (no heading #${fragment})`);
    }
  }
}
for (const line of broken) process.stderr.write(`check-links: ${line}\n`);
process.stdout.write(`check-links: ${files.length} documents, ${broken.length} broken links\n`);
process.exit(broken.length > 0 ? 1 : 0);
