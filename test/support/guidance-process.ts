/**
 * One guidance worker as its own OS process (for test/guidance/processes.test.ts): builds the
 * feature on GUIDANCE_TEST_REDIS_URL / GUIDANCE_TEST_MONGODB_URI, prints `guidance-ready`, then
 * answers each stdin line (`<role> <channel>`) with one stdout line: the JSON of the section
 * and the entries a turn of that role on that channel would quote.
 */
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { createGuidanceFeature } from '../../src/guidance/feature.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { roster } from '../../roles/index.js';
import { GUIDANCE_CHANNELS, TEST_GUIDANCE_CONFIG, TEST_MODEL_CONFIG } from './guidance-rig.js';

const redis = new Redis(process.env.GUIDANCE_TEST_REDIS_URL ?? '');
const connection = mongoose.createConnection(process.env.GUIDANCE_TEST_MONGODB_URI ?? '', { serverSelectionTimeoutMS: 5000 });
const feature = createGuidanceFeature(
  { redis, mongo: connection, logger: createLogger({ level: 'error', sink: (line) => process.stderr.write(`${line}\n`) }), metrics: createMetrics() },
  { guidance: TEST_GUIDANCE_CONFIG, adminToken: undefined, model: TEST_MODEL_CONFIG },
  { roles: roster, channels: () => GUIDANCE_CHANNELS },
);
feature.start();
await feature.ready();
process.stdout.write('guidance-ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [roleId = '', channel = ''] = line.split(' ');
  const guided = feature.turn.brief({ roleId, channel, site: undefined, contact: undefined, applying: [] });
  process.stdout.write(`${JSON.stringify({ section: guided.section ?? '', entries: guided.entries })}\n`);
}
await feature.close();
await connection.close();
redis.disconnect();
