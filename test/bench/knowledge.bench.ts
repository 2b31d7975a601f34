/**
 * `npm run bench:knowledge`: the knowledge's figures on this machine, on real Redis and FerretDB.
 *   - index build from MongoDB at 20,000 chunks (ms) and the RSS it adds, with 512-dimension
 *     embeddings (MODEL_EMBEDDING served by the loopback stub, test/support/embedding-stub.ts);
 *     `BENCH_KNOWLEDGE_EMBEDDINGS=0` measures the lexical index alone;
 *   - search p50/p99 at 20,000 chunks: BM25 alone, hybrid (BM25 + vectors, RRF), and a turn's
 *     retrieve with its one query-embedding request to the stub;
 *   - a crawl of a 500-page loopback site (pages/s);
 *   - recall@5 on a small fictional help center, with and without the judge's search terms, BM25
 *     alone and hybrid (the stub's vectors are a bag of words; a second stub adds a synonym table
 *     as a stand-in for a real model's sense of meaning).
 * A knowledge turn's budget (model calls, Redis commands) is held by test/knowledge/turn.test.ts:
 * the same model calls as a turn without knowledge; a hit adds no Redis command, a miss one pipeline.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { chunkText } from '../../src/knowledge/chunking.js';
import { chunkInput, packVector } from '../../src/knowledge/embeddings.js';
import { createKnowledgeFeature } from '../../src/knowledge/feature.js';
import { createKnowledgeStore } from '../../src/knowledge/store.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { TEST_KNOWLEDGE_CONFIG } from '../support/knowledge-rig.js';
import { startEmbeddingStub, stubEmbedding, stubEmbeddingModels } from '../support/embedding-stub.js';
import { startMongo, startRedis } from '../support/services.js';
import { query, sentence } from './knowledge-corpus.js';
import { ARTICLES, QUESTIONS } from './knowledge-fixture.js';

const CHUNKS = Number(process.env.BENCH_KNOWLEDGE_CHUNKS ?? 20_000);
const CHUNKS_PER_OWNER = 50;
const SITE_PAGES = 500;
const EMBEDDINGS = process.env.BENCH_KNOWLEDGE_EMBEDDINGS !== '0';
const DIMENSIONS = 512;
const EMBEDDING_LABEL = 'openai:text-embedding-3-small';
/** A stand-in for a model's sense of meaning: the customer's words and the help center's, as one. */
const SYNONYMS = [
  ['delivery', 'parcel', 'deliver', 'arrive', 'take'],
  ['refund', 'money'],
  ['shipping', 'postage', 'ship'],
  ['gift', 'present', 'voucher'],
  ['klarna', 'instalments', 'installments'],
  ['repair', 'fix', 'broke', 'torn'],
  ['return', 'send'],
  ['open', 'opening', 'sunday'],
  ['change', 'wrong'],
  ['size', 'fit'],
];
const print = (line: string) => process.stdout.write(`${line}\n`);
const logger = createLogger({ level: 'warn', sink: (line) => process.stderr.write(`${line}\n`) });
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const gc = () => (globalThis as { gc?: () => void }).gc?.();

const redisServer = await startRedis();
const mongoServer = await startMongo();
const redis = new Redis(redisServer.url);
const mongoUri = new URL(mongoServer.uri);
mongoUri.pathname = `/bench_knowledge_${Date.now()}`;
const connection = mongoose.createConnection(mongoUri.toString());
await connection.asPromise();

try {
  // 1. 20,000 chunks in MongoDB (written as the library writes them: ≤ 20 statements per command).
  const store = createKnowledgeStore(connection);
  const writeStarted = performance.now();
  for (let owner = 0; owner < CHUNKS / CHUNKS_PER_OWNER; owner += 1) {
    const ownerId = `doc:doc_${owner.toString(16).padStart(16, '0')}`;
    const text = Array.from({ length: CHUNKS_PER_OWNER }, () => `## ${sentence(3)}\n\n${sentence(120)}.`).join('\n\n');
    const cut = chunkText(text, { owner: ownerId, title: `Article ${owner} ${sentence(3)}`, url: `https://help.example/a/${owner}`, sites: [] });
    const chunks = EMBEDDINGS
      ? cut.map((chunk) => ({ ...chunk, vector: packVector(stubEmbedding(chunkInput(chunk), DIMENSIONS)), embeddingModel: EMBEDDING_LABEL }))
      : cut;
    await store.putOwner(
      {
        _id: ownerId,
        kind: 'document',
        title: `Article ${owner}`,
        url: '',
        chunkIds: chunks.map((chunk) => chunk._id),
        hash: String(owner),
        sites: [],
        updatedAt: new Date(),
      },
      chunks,
    );
  }
  print(
    `chunks written to MongoDB: ${CHUNKS}${EMBEDDINGS ? ` with ${DIMENSIONS}-dimension embeddings` : ' (no embeddings)'} in ${Math.round(performance.now() - writeStarted)} ms`,
  );
  const stub = await startEmbeddingStub();
  const models = EMBEDDINGS ? stubEmbeddingModels(stub, DIMENSIONS) : undefined;

  gc();
  const rssBefore = process.memoryUsage().rss;
  const feature = await createKnowledgeFeature({
    redis,
    connection,
    logger,
    metrics: createMetrics(),
    config: TEST_KNOWLEDGE_CONFIG,
    adminToken: undefined,
    model: models,
  });
  const buildStarted = performance.now();
  feature.start();
  await feature.ready();
  const buildMs = performance.now() - buildStarted;
  gc();
  const rssAdded = (process.memoryUsage().rss - rssBefore) / 1024 / 1024;
  print(
    `index build from MongoDB at ${feature.service.index.size()} chunks (${feature.service.index.vectors()} with vectors): ${Math.round(buildMs)} ms; RSS added: ${rssAdded.toFixed(1)} MB (target ≤ 150 MB with embeddings)`,
  );

  // 2. Search latency at 20,000 chunks: BM25 alone, hybrid, and a turn's retrieve (its query embedded by the stub).
  const index = feature.service.index;
  const audience = { channel: 'whatsapp' };
  const measure = async (label: string, run: (text: string, vector: Float32Array) => Promise<unknown>) => {
    const times: number[] = [];
    for (let count = 0; count < 1_000; count += 1) {
      const text = query(2 + (count % 4));
      const vector = Float32Array.from(stubEmbedding(text, DIMENSIONS));
      const started = performance.now();
      await run(text, vector);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    print(`${label} at ${index.size()} chunks: p50 ${percentile(times, 50).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms (targets ≤ 10 / 30 ms)`);
  };
  await measure('search, BM25', (text) => index.search(text, audience, 5));
  if (EMBEDDINGS) {
    await measure('search, hybrid (BM25 + vectors, RRF)', (text, vector) => index.search(text, audience, 5, { vector }));
    const before = stub.requests.length;
    await measure("retrieve, hybrid, with the query's embedding request", (text) => feature.retrieve(text, audience));
    print(`  embedding requests for 1,000 retrieves: ${stub.requests.length - before}`);
  }
  await feature.close();

  // 3. Recall@5 on the fictional help center (a fresh database, the same feature).
  const fixtureUri = new URL(mongoUri);
  fixtureUri.pathname = `${mongoUri.pathname}_fixture`;
  const fixtureConnection = mongoose.createConnection(fixtureUri.toString());
  await fixtureConnection.asPromise();
  const synonymStub = await startEmbeddingStub({ synonyms: SYNONYMS });
  const fixture = await createKnowledgeFeature({
    redis,
    connection: fixtureConnection,
    logger,
    metrics: createMetrics(),
    config: TEST_KNOWLEDGE_CONFIG,
    adminToken: undefined,
    model: stubEmbeddingModels(synonymStub, DIMENSIONS),
  });
  fixture.start();
  await fixture.ready();
  const titleOf = new Map<string, string>();
  for (const article of ARTICLES) {
    const added = await fixture.service.addDocument({ bytes: Buffer.from(article.text), contentType: 'text/markdown', title: article.title });
    titleOf.set(article.id, article.title);
    void added;
  }
  const recall = async (withTerms: boolean, mode: 'bm25' | 'hybrid' | 'bag of words') => {
    let found = 0;
    for (const question of QUESTIONS) {
      const variants = withTerms ? [question.terms, question.question] : [question.question];
      const vector = Float32Array.from(stubEmbedding(variants.join('\n'), DIMENSIONS, mode === 'hybrid' ? SYNONYMS : []));
      const passages =
        mode === 'bm25' ? await fixture.service.index.search(variants, audience, 5) : await fixture.service.index.search(variants, audience, 5, { vector });
      if (passages.slice(0, 5).some((passage) => passage.title === titleOf.get(question.answer))) found += 1;
    }
    return (found / QUESTIONS.length).toFixed(2);
  };
  print(`recall@5 on the help-center fixture (${QUESTIONS.length} questions), with the judge's terms / customer's words only:`);
  print(`  BM25: ${await recall(true, 'bm25')} / ${await recall(false, 'bm25')}`);
  print(`  hybrid, stub vectors as a bag of words: ${await recall(true, 'bag of words')} / ${await recall(false, 'bag of words')}`);
  print(`  hybrid, stub vectors with a synonym table (a stand-in for a model): ${await recall(true, 'hybrid')} / ${await recall(false, 'hybrid')}`);
  await synonymStub.close();
  await fixture.close();

  // 4. A crawl of a 500-page loopback site.
  const server = createServer((request, response) => {
    const page = Number(/^\/p\/(\d+)$/.exec(request.url ?? '')?.[1] ?? (request.url === '/' ? 0 : Number.NaN));
    if (request.url === '/robots.txt') return void response.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
    if (!Number.isFinite(page) || page >= SITE_PAGES) return void response.writeHead(404).end();
    const links = [1, 2, 3].map((step) => `<a href="/p/${(page * 3 + step) % SITE_PAGES}">next</a>`).join(' ');
    response
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<!doctype html><html><head><title>Page ${page}</title></head><body><nav>${links}</nav><main><article><h1>Page ${page}</h1><h2>About</h2><p>${sentence(80)}.</p><h2>Details</h2><p>${sentence(80)}.</p></article></main></body></html>`,
      );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const crawler = await createKnowledgeFeature({
    redis,
    connection: fixtureConnection,
    logger,
    metrics: createMetrics(),
    config: { ...TEST_KNOWLEDGE_CONFIG, crawl: { ...TEST_KNOWLEDGE_CONFIG.crawl, maxPages: SITE_PAGES + 10, maxDepth: 20 } },
    adminToken: undefined,
  });
  const source = await crawler.service.addSource({ url: `${origin}/` }, 'admin');
  const crawlStarted = performance.now();
  const report = await crawler.service.crawl(source._id);
  const crawlSeconds = (performance.now() - crawlStarted) / 1000;
  print(
    `crawl of a ${SITE_PAGES}-page loopback site: ${report?.pages ?? 0} pages in ${crawlSeconds.toFixed(1)} s (${((report?.pages ?? 0) / crawlSeconds).toFixed(1)} pages/s, 2 requests at a time)`,
  );
  await crawler.close();
  server.close();
  await stub.close();
  await fixtureConnection.dropDatabase();
  await fixtureConnection.close();
} finally {
  await connection.dropDatabase().catch(() => undefined);
  await connection.close();
  redis.disconnect();
  await redisServer.stop();
  await mongoServer.stop();
}
