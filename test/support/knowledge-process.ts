/**
 * One knowledge worker as its own OS process (for test/knowledge/processes.test.ts): builds the
 * feature on KNOWLEDGE_TEST_REDIS_URL / KNOWLEDGE_TEST_MONGODB_URI, prints `knowledge-ready`,
 * then answers each stdin line (a query) with one stdout line: the JSON list of the titles found.
 */
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { createKnowledgeFeature } from '../../src/knowledge/feature.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { TEST_KNOWLEDGE_CONFIG } from './knowledge-rig.js';

const redis = new Redis(process.env.KNOWLEDGE_TEST_REDIS_URL ?? '');
const connection = mongoose.createConnection(process.env.KNOWLEDGE_TEST_MONGODB_URI ?? '', { serverSelectionTimeoutMS: 5000 });
const feature = await createKnowledgeFeature({
  redis,
  connection,
  logger: createLogger({ level: 'error', sink: (line) => process.stderr.write(`${line}\n`) }),
  metrics: createMetrics(),
  config: TEST_KNOWLEDGE_CONFIG,
  adminToken: undefined,
});
feature.start();
await feature.ready();
process.stdout.write('knowledge-ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const found = await feature.retrieve(line, { channel: 'whatsapp' });
  process.stdout.write(`${JSON.stringify(found.map((passage) => passage.title))}\n`);
}
await feature.close();
await connection.close();
redis.disconnect();
