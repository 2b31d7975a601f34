/**
 * Checks every relative link in README.md, CHANGELOG.md and docs/ (recursively): the file it
 * names exists and, with a #fragment, has a heading of that GitHub anchor. Links to other sites
 * are not fetched (nothing here calls out). Exits 1 listing each broken link.
 *
 *   node --import tsx scripts/check-links.ts
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

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
    for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const link = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
      const [path = '', fragment] = link.split('#');
      const targetFile = path === '' ? file : resolve(dirname(file), decodeURI(path));
      const where = `${relative(root, file)}:${index + 1}`;
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
