/**
 * What a process's RSS is made of, read from `/proc/<pid>/smaps` (Linux; the soak prints it):
 * file-backed pages (the node binary, libraries), the main malloc heap (`[heap]`, brk), glibc's
 * other malloc arenas (each a 64 MiB-aligned 64 MiB anonymous reservation, its used part
 * readable) and the rest of the anonymous memory (V8's heap pages, large mallocs, thread stacks).
 * Set against V8's own per-space figures it splits "native" memory into malloc and V8.
 */
import { readFile } from 'node:fs/promises';

const ARENA = 64 * 2 ** 20;

export interface MemoryMap {
  rss: number;
  /** File-backed resident pages (code and data of node and its libraries). */
  file: number;
  /** The main arena: `[heap]`, grown with brk. */
  brk: number;
  arenas: number;
  /** Resident bytes in glibc's other arenas. */
  arenaRss: number;
  /** Every other anonymous mapping: V8's pages, mmapped large allocations, thread stacks. */
  otherAnon: number;
}

interface Mapping {
  start: number;
  end: number;
  perms: string;
  path: string;
  rss: number;
}

export async function readMemoryMap(pid: number): Promise<MemoryMap | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return undefined;
  }
  const mappings: Mapping[] = [];
  for (const line of text.split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (header) {
      const [, start = '0', end = '0', perms = '', inode = '0', path = ''] = header;
      mappings.push({ start: parseInt(start, 16), end: parseInt(end, 16), perms, path: inode === '0' ? path : path || 'file', rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    const last = mappings.at(-1);
    if (rss && last) last.rss = Number(rss[1]) * 1024;
  }
  const map: MemoryMap = { rss: 0, file: 0, brk: 0, arenas: 0, arenaRss: 0, otherAnon: 0 };
  for (let index = 0; index < mappings.length; index++) {
    const mapping = mappings[index];
    if (!mapping) continue;
    map.rss += mapping.rss;
    if (mapping.path === '[heap]') map.brk += mapping.rss;
    else if (mapping.path !== '' && !mapping.path.startsWith('[anon')) map.file += mapping.path.startsWith('[') ? 0 : mapping.rss;
    else {
      // An arena: its used part (rw) then the reserved rest (---p) adjacent, 64 MiB in all from a 64 MiB boundary.
      const next = mappings[index + 1];
      const span =
        mapping.end - mapping.start + (next && next.start === mapping.end && next.perms.startsWith('---') && next.path === '' ? next.end - next.start : 0);
      if (mapping.start % ARENA === 0 && span === ARENA && mapping.perms.startsWith('rw')) {
        map.arenas++;
        map.arenaRss += mapping.rss;
      } else map.otherAnon += mapping.rss;
    }
  }
  // Stacks and vdso-like pseudo-files count as anonymous.
  for (const mapping of mappings)
    if (mapping.path.startsWith('[') && mapping.path !== '[heap]' && !mapping.path.startsWith('[anon')) map.otherAnon += mapping.rss;
  return map;
}
