/**
 * MODEL_EMBEDDING end to end on real FerretDB and Redis, the provider's embeddings endpoint
 * stood in for by a stub on loopback: chunks are embedded at ingest in batches (512 dimensions
 * asked) and stored with the chunk in MongoDB; another process builds its index with those
 * vectors; a search embeds the query with one request and fuses the vector ranking with BM25;
 * a failing provider leaves ingest and search lexical, logged and counted, never failing them;
 * what lacks vectors is embedded when a process starts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import mongoose, { type Connection } from 'mongoose';
import { createKnowledgeFeature, type KnowledgeFeature } from '../../src/knowledge/feature.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { startEmbeddingStub, stubEmbeddingModels, type EmbeddingStub } from '../support/embedding-stub.js';
import { eventually, type LogLine } from '../support/harness.js';
import { knowledgeMongoUri, ownKnowledgeRedisUrl, TEST_KNOWLEDGE_CONFIG } from '../support/knowledge-rig.js';

const SYNONYMS = [['delivery', 'parcel', 'courier']];

describe('MODEL_EMBEDDING: hybrid retrieval', () => {
  let stub: EmbeddingStub;
  let redis: Redis;
  let connection: Connection;
  const logs: LogLine[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const features: KnowledgeFeature[] = [];

  const start = async (metrics: Metrics = createMetrics(), embedded = true) => {
    const feature = await createKnowledgeFeature({
      redis,
      connection,
      logger,
      metrics,
      config: TEST_KNOWLEDGE_CONFIG,
      adminToken: undefined,
      ...(embedded ? { model: stubEmbeddingModels(stub) } : {}),
    });
    features.push(feature);
    feature.start();
    await feature.ready();
    return feature;
  };

  beforeAll(async () => {
    stub = await startEmbeddingStub({ synonyms: SYNONYMS });
    redis = new Redis(await ownKnowledgeRedisUrl());
    connection = mongoose.createConnection(knowledgeMongoUri(), { serverSelectionTimeoutMS: 5000 });
    await connection.asPromise();
  });
  afterAll(async () => {
    for (const feature of features) await feature.close();
    await connection?.dropDatabase().catch(() => undefined);
    await connection?.close();
    redis?.disconnect();
    await stub?.close();
  });

  it('embeds chunks at ingest in batches, stores them in MongoDB, and another process builds with them', async () => {
    const first = await start();
    const entries = Array.from({ length: 3 }, (_, n) => ({ question: `Filler question ${n} about topic${n}?`, answer: `Topic${n} has its own answer.` }));
    await first.service.addFaq([{ question: 'How long does delivery take?', answer: 'Standard delivery takes 2 to 3 business days.' }, ...entries]);
    const document = await first.service.addDocument({
      bytes: Buffer.from('# Size guide\n\n## Jackets\n\nJackets run large.\n\n## Boots\n\nBoots run true to size.'),
      contentType: 'text/markdown',
      title: 'Size guide',
    });
    expect(document.chunks).toBe(2);
    // One request per owner's chunks (≤ 64 each), 512 dimensions asked of text-embedding-3-small.
    expect(stub.requests.every((entry) => entry.dimensions === 512 && entry.model === 'text-embedding-3-small')).toBe(true);
    expect(stub.requests.at(-1)!.inputs).toEqual([
      'Size guide\nSize guide › Jackets\nJackets run large.',
      'Size guide\nSize guide › Boots\nBoots run true to size.',
    ]);
    const stored = await connection.collection('knowledge_chunks').findOne({ _id: `doc:${document.id}#0` as never });
    expect(stored).toMatchObject({ embeddingModel: 'openai:text-embedding-3-small' });
    expect((stored!.vector as { buffer: Uint8Array }).buffer.byteLength).toBe(512 * 4);
    expect(first.service.index.vectors()).toBe(first.service.index.size());

    const second = await start();
    expect(second.service.index.size()).toBe(first.service.index.size());
    expect(second.service.index.vectors()).toBe(second.service.index.size());
  });

  it('embeds the question once; a hit by meaning alone, not very close, is no answer', async () => {
    const feature = features[1]!;
    const before = stub.requests.length;
    const passages = await feature.retrieve('where is my parcel?', { channel: 'whatsapp' });
    expect(stub.requests.length - before).toBe(1);
    expect(stub.requests.at(-1)!.inputs).toEqual(['where is my parcel?']);
    expect(passages).toEqual([]);
    const withTerms = await feature.retrieve('which size for boots', { channel: 'whatsapp', terms: 'size guide boots' });
    expect(stub.requests.length - before).toBe(2);
    expect(withTerms[0]).toMatchObject({ title: 'Size guide', headingPath: ['Size guide', 'Boots'] });
    expect(await feature.retrieve('do you rent surfboards in winter?', { channel: 'whatsapp' })).toEqual([]);
  });

  it('a failing provider: the query is answered lexically; ingest stores the chunks without vectors, marked to be embedded when next written', async () => {
    const metrics = createMetrics();
    const feature = await start(metrics);
    stub.failNext(1);
    expect(await feature.retrieve('where is my parcel?', { channel: 'whatsapp' })).toEqual([]);
    expect((await feature.retrieve('delivery times', { channel: 'whatsapp' }))[0]?.title).toBe('How long does delivery take?');
    expect(metrics.value('knowledge_embedding_failed_total', { stage: 'query' })).toBe(1);

    stub.failNext(3);
    const added = await feature.service.addFaq([{ question: 'Do you sell gift cards?', answer: 'Gift cards from 10 to 200 euros.' }]);
    expect(metrics.value('knowledge_embedding_failed_total', { stage: 'ingest' })).toBe(1);
    expect(logs.some((line) => line.event === 'knowledge-embedding-failed' && line.owner === `doc:${added[0]!.id}`)).toBe(true);
    expect((await feature.retrieve('gift cards', { channel: 'whatsapp' }))[0]?.title).toBe('Do you sell gift cards?');
    const owner = await feature.service.store.getOwner(`doc:${added[0]!.id}`);
    expect(owner?.hash).toMatch(/:unembedded$/);
    expect(feature.service.index.vectors()).toBe(feature.service.index.size() - 1);
  });

  it('without MODEL_EMBEDDING: no embedding request, no vector held, the same lexical answers', async () => {
    const before = stub.requests.length;
    const lexical = await start(createMetrics(), false);
    expect(lexical.service.index.vectors()).toBe(0);
    expect((await lexical.retrieve('delivery times', { channel: 'whatsapp' }))[0]?.title).toBe('How long does delivery take?');
    expect(await lexical.retrieve('where is my parcel?', { channel: 'whatsapp' })).toEqual([]);
    expect(stub.requests.length).toBe(before);
  });

  it('content added without vectors (before MODEL_EMBEDDING, or while the provider failed) is embedded when a process starts with it', async () => {
    const lexical = features[3]!;
    const [added] = await lexical.service.addFaq([{ question: 'Do you repair zips?', answer: 'Zip repairs cost 15 euros.' }]);
    const feature = await start();
    await eventually(() => feature.service.index.vectors() === feature.service.index.size());
    const stored = await connection.collection('knowledge_chunks').findOne({ _id: `doc:${added!.id}#0` as never });
    expect(stored).toMatchObject({ embeddingModel: 'openai:text-embedding-3-small' });
    // Logged once the last owner is written and announced.
    await eventually(() => logs.some((line) => line.event === 'knowledge-embeddings-added'));
  });
});
