/**
 * `npm run bench:knowledge-libraries`: the knowledge's own BM25 index (`src/knowledge/lexical-index.ts`)
 * against MiniSearch, the well-kept library of its kind, at 20,000 passages of the knowledge
 * benchmark's synthetic text, both fed the same analysed terms (title ×2, headings ×1.5, text ×1).
 * Each index is built in a process of its own (this file, run with its name), so the memory it adds
 * is its alone: build time, the heap and array buffers (typed arrays) it holds, the RSS it adds,
 * search p50/p99 over 1,000 queries of 2–5 words (top 5), and the time to remove a quarter of the
 * passages (a source crawled again).
 */
import { spawnSync } from 'node:child_process';
import MiniSearch from 'minisearch';
import { chunkText } from '../../src/knowledge/chunking.js';
import { LexicalIndex, weighTerms } from '../../src/knowledge/lexical-index.js';
import { terms, words } from '../../src/knowledge/text-analysis.js';
import { query, sentence } from './knowledge-corpus.js';

const PASSAGES = 20_000;
const PASSAGES_PER_ARTICLE = 50;
const QUERIES = 1_000;
const print = (line: string) => process.stdout.write(`${line}\n`);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const gc = () => (globalThis as { gc?: () => void }).gc?.();
const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

interface Candidate {
  add(id: number, fields: readonly [string[], string[], string[]]): void;
  top5(queryTerms: string[]): void;
  remove(id: number): void;
}

function ours(): Candidate {
  const index = new LexicalIndex();
  return {
    add(_id, [title, heading, text]) {
      index.add(
        index.allocate(),
        weighTerms([
          [title, 2],
          [heading, 1.5],
          [text, 1],
        ]),
      );
    },
    top5(queryTerms) {
      const { slots, scores } = index.score(queryTerms.map((term) => [[term, 1] as const]));
      slots
        .map((slot) => [slot, scores[slot] ?? 0] as const)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5);
      index.reset(slots);
    },
    remove: (id) => index.remove(id),
  };
}

function miniSearch(): Candidate {
  const index = new MiniSearch<{ id: number; title: string; heading: string; text: string }>({
    fields: ['title', 'heading', 'text'],
    // The terms come analysed (folded, stop words out, stemmed): split on the spaces they were joined by.
    tokenize: (text) => (text ? text.split(' ') : []),
    processTerm: (term) => term,
    searchOptions: { boost: { title: 2, heading: 1.5 } },
  });
  return {
    add: (id, [title, heading, text]) => index.add({ id, title: title.join(' '), heading: heading.join(' '), text: text.join(' ') }),
    top5: (queryTerms) => void index.search(queryTerms.join(' ')).slice(0, 5),
    remove: (id) => index.discard(id),
  };
}

function measure(name: string, candidate: () => Candidate): void {
  gc();
  const before = process.memoryUsage();
  const started = performance.now();
  const index = candidate();
  let passages = 0;
  for (let article = 0; article < PASSAGES / PASSAGES_PER_ARTICLE; article += 1) {
    const text = Array.from({ length: PASSAGES_PER_ARTICLE }, () => `## ${sentence(3)}\n\n${sentence(120)}.`).join('\n\n');
    for (const chunk of chunkText(text, { owner: `doc:${article}`, title: `Article ${article} ${sentence(3)}`, url: '', sites: [] })) {
      index.add(passages, [terms(words(chunk.title), 'en'), terms(words(chunk.headingPath.join(' ')), 'en'), terms(words(chunk.text), 'en')]);
      passages += 1;
    }
  }
  const buildMs = performance.now() - started;
  gc();
  const after = process.memoryUsage();
  const times: number[] = [];
  for (let count = 0; count < QUERIES; count += 1) {
    const queryTerms = terms(words(query(2 + (count % 4))), 'en');
    const searched = performance.now();
    index.top5(queryTerms);
    times.push(performance.now() - searched);
  }
  times.sort((a, b) => a - b);
  const removed = performance.now();
  for (let id = 0; id < passages / 4; id += 1) index.remove(id);
  print(
    `${name.padEnd(12)} ${passages} passages: build ${Math.round(buildMs)} ms; heap + array buffers added ${megabytes(after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers)}, ` +
      `RSS added ${megabytes(after.rss - before.rss)}; search p50 ${percentile(times, 50).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms; ` +
      `removing ${passages / 4}: ${Math.round(performance.now() - removed)} ms`,
  );
}

const candidates: Record<string, () => Candidate> = { 'own index': ours, MiniSearch: miniSearch };
const which = process.argv[2];
if (which) {
  const candidate = candidates[which];
  if (!candidate) throw new Error(`no candidate "${which}"`);
  measure(which, candidate);
} else {
  print(`Knowledge index libraries, ${PASSAGES} passages of about 120 words; node ${process.versions.node}, one process each`);
  for (const name of Object.keys(candidates)) {
    const run = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, name], { stdio: 'inherit' });
    if (run.status !== 0) process.exitCode = 1;
  }
}
