/**
 * `npm run knowledge -- <command>`: the knowledge's operator API from a terminal, with the
 * service's configuration (MONGODB_URI, REDIS_URL or REDIS_CLUSTER_NODES), through the same
 * service functions the admin routes call — so every worker's index hears of a change through
 * the change stream within seconds. See docs/knowledge.md.
 *
 *   add <url>  [--sitemap <url>] [--sites a,b]   a website: registered as a source and crawled now (the crawl's report)
 *   add <file> [--title <t>] [--url <u>] [--sites a,b]
 *                                                a document (PDF, Markdown, HTML or text, checked by its content)
 *   list                                         sources, documents and FAQ entries, pages
 *   remove <id>                                  a FAQ entry, document, source (with its pages) or page
 *   crawl <id>                                   crawls a source again now (the crawl's report)
 *
 * Exits 0 when done, 1 with one line on stderr when the input is refused or the work failed, 2
 * on a usage error.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { errorText } from '../src/errors/index.js';
import type { CrawlReport } from '../src/knowledge/crawler.js';
import { createKnowledgeFeature, knowledgeOptions, type KnowledgeFeature } from '../src/knowledge/feature.js';
import { SourceInputSchema } from '../src/knowledge/model.js';
import { createLogger } from '../src/logger.js';
import { MediaRejectedError } from '../src/media/content-check.js';
import { createMetrics } from '../src/metrics.js';
import { createRedis } from '../src/redis.js';
import { connectMongo } from '../src/store/transcript-store.js';

const USAGE = `usage: npm run knowledge -- add <url|file> [--title <t>] [--url <u>] [--sitemap <url>] [--sites a,b]
       npm run knowledge -- list | remove <id> | crawl <id>
`;

/** A refusal of the input: one line on stderr, exit 1. */
class Refused extends Error {}

const KINDS = [
  [/^faq_[0-9a-f]{16}$/, 'faq'],
  [/^doc_[0-9a-f]{16}$/, 'documents'],
  [/^src_[0-9a-f]{16}$/, 'sources'],
  [/^page:[0-9a-f]{24}$/, 'pages'],
] as const;

/** What a file declares itself as, from its first bytes (a PDF) or its name; `checkDocument` then checks the content against it. */
function declaredType(path: string, bytes: Uint8Array): string {
  if (Buffer.from(bytes.subarray(0, 5)).toString('latin1') === '%PDF-') return 'application/pdf';
  const extension = extname(path).toLowerCase();
  if (extension === '.pdf') return 'application/pdf';
  if (extension === '.md' || extension === '.markdown') return 'text/markdown';
  if (extension === '.html' || extension === '.htm') return 'text/html';
  if (/^\s*(<!doctype html|<html[\s>])/i.test(Buffer.from(bytes.subarray(0, 512)).toString('utf8'))) return 'text/html';
  return 'text/plain';
}

const sitesOf = (value: string | undefined) =>
  value
    ?.split(',')
    .map((site) => site.trim())
    .filter(Boolean);

/** The crawl's report on stdout; a failed crawl (robots.txt, the start page, DNS) is also one line on stderr and exit 1. */
function printCrawl(report: CrawlReport): void {
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (report.outcome === 'failed') throw new Refused(`crawl failed: ${report.errors[0] ?? 'unknown reason'}`);
}

type Options = { title?: string | undefined; url?: string | undefined; sitemap?: string | undefined; sites?: string | undefined; maxBytes: number };

async function add(feature: KnowledgeFeature, target: string, options: Options): Promise<void> {
  const { service } = feature;
  if (/^https?:\/\//i.test(target)) {
    const input = SourceInputSchema.safeParse({
      url: target,
      ...(options.sitemap ? { sitemap: options.sitemap } : {}),
      ...(options.sites ? { sites: sitesOf(options.sites) } : {}),
    });
    if (!input.success)
      throw new Refused(`invalid source: ${input.error.issues.map((issue) => `${issue.path.join('.') || 'url'}: ${issue.message}`).join('; ')}`);
    const source = await service.addSource(input.data, 'admin');
    process.stdout.write(`added source ${source._id} ${source.url}; crawling…\n`);
    const report = await service.crawl(source._id);
    if (!report) throw new Refused(`a crawl of ${source._id} is already running`);
    printCrawl(report);
    return;
  }
  const info = await stat(target).catch(() => undefined);
  if (!info?.isFile()) throw new Refused(`no such file: ${target} (give a file or an http(s) URL)`);
  const limit = options.maxBytes;
  if (info.size > limit) throw new Refused(`${target} is ${info.size} bytes, over KNOWLEDGE_MAX_DOCUMENT_BYTES (${limit})`);
  if (info.size === 0) throw new Refused(`${target} is empty`);
  const bytes = new Uint8Array(await readFile(target));
  const sites = sitesOf(options.sites);
  const added = await service.addDocument({
    bytes,
    contentType: declaredType(target, bytes),
    filename: basename(target),
    ...(options.title ? { title: options.title } : {}),
    ...(options.url ? { url: options.url } : {}),
    ...(sites ? { sites } : {}),
  });
  process.stdout.write(
    `added document ${added.id} (${added.kind}, ${added.chunks} passages${added.dropped ? `, ${added.dropped} steering lines dropped` : ''})\n`,
  );
}

async function list(feature: KnowledgeFeature): Promise<void> {
  const overview = await feature.service.overview();
  const lines = [
    `sources (${overview.sources.length})`,
    ...overview.sources.map(
      (source) =>
        `  ${source.id}  ${source.url}  ${source.pages} pages  last crawl ${source.lastCrawlAt ? `${new Date(source.lastCrawlAt).toISOString()} ${source.lastCrawl ?? ''}`.trim() : 'never'}${source.errors.length ? `  ${source.errors.length} errors, first: ${source.errors[0]}` : ''}`,
    ),
    `documents and FAQ (${overview.documents.length})`,
    ...overview.documents.map((item) => `  ${item.id}  ${item.kind}  ${item.title}  ${item.chunks} passages${item.url ? `  ${item.url}` : ''}`),
    `pages (${overview.pages.length})`,
    ...overview.pages.map((page) => `  ${page.id}  ${page.title}  ${page.chunks} passages  ${page.url ?? ''}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function run(feature: KnowledgeFeature, command: string, args: string[], options: Options): Promise<void> {
  const [target] = args;
  if (command === 'list') return list(feature);
  if (!target) throw new Refused(`${command} needs an argument`);
  if (command === 'add') return add(feature, target, options);
  const kind = KINDS.find(([pattern]) => pattern.test(target))?.[1];
  if (!kind) throw new Refused(`not a knowledge id: ${target} (faq_…, doc_…, src_… or page:…)`);
  if (command === 'remove') {
    if (!(await feature.service.remove(kind, target))) throw new Refused(`unknown ${kind} item: ${target}`);
    process.stdout.write(`removed ${target}\n`);
    return;
  }
  if (kind !== 'sources' || !(await feature.service.store.getSource(target))) throw new Refused(`unknown source: ${target}`);
  const report = await feature.service.crawl(target);
  if (!report) throw new Refused(`a crawl of ${target} is already running`);
  printCrawl(report);
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { title: { type: 'string' }, url: { type: 'string' }, sitemap: { type: 'string' }, sites: { type: 'string' } },
    });
  } catch (error) {
    process.stderr.write(`${errorText(error)}\n${USAGE}`);
    return 2;
  }
  const [command, ...args] = parsed.positionals;
  if (!command || !['add', 'list', 'remove', 'crawl'].includes(command)) {
    process.stderr.write(USAGE);
    return 2;
  }
  const config = loadConfig();
  // Log lines (warnings, steering dropped) go to stderr: stdout is the command's answer.
  const logger = createLogger({ level: 'warn', sink: (line) => process.stderr.write(`${line}\n`) });
  const redis = createRedis(config);
  const connection = await connectMongo(config.mongodbUri);
  const feature = await createKnowledgeFeature({ redis, connection, logger, metrics: createMetrics(), ...knowledgeOptions(config, {}) });
  try {
    await run(feature, command, args, { ...parsed.values, maxBytes: config.knowledge.maxDocumentBytes });
    return 0;
  } catch (error) {
    if (!(error instanceof Refused) && !(error instanceof MediaRejectedError)) logger.error('knowledge-command-failed', { command, error });
    process.stderr.write(`${error instanceof Refused || error instanceof MediaRejectedError ? error.message : `failed: ${errorText(error)}`}\n`);
    return 1;
  } finally {
    await feature.close();
    await connection.close();
    redis.disconnect();
  }
}

process.exitCode = await main(process.argv.slice(2));
