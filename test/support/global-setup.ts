// Jest globalSetup: starts one redis-server and one MongoDB-wire server (FerretDB, or the
// server MONGODB_URI names) for the whole run and publishes them to the test workers through
// TEST_REDIS_URL and TEST_MONGODB_URI (workers start after this and inherit process.env).
// Handles stay on globalThis under a Symbol.for key that global-teardown.ts reads.
//
// Jest loads this file outside its module system: transformed to CommonJS and required by
// Node, without moduleNameMapper. So the nodenext-style `./services.js` import would not
// resolve; a Node resolve hook maps it to the `.ts` source for the duration of the load.
import { registerHooks } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { MongoHandle, RedisClusterHandle, RedisHandle } from './services.js';

export interface TestServiceHandles {
  redis?: RedisHandle;
  mongo?: MongoHandle;
  cluster?: RedisClusterHandle;
}

const handlesKey = Symbol.for('wa-assistant.test-services');
type GlobalWithHandles = typeof globalThis & { [handlesKey]?: TestServiceHandles };

async function loadServices(): Promise<typeof import('./services.js')> {
  const hooks = registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (specifier.startsWith('.') && specifier.endsWith('.js') && parent?.startsWith('file:') && !parent.includes('/node_modules/')) {
        const candidate = new URL(specifier, parent);
        const typeScriptCandidate = new URL(specifier.replace(/\.js$/, '.ts'), parent);
        if (!existsSync(fileURLToPath(candidate)) && existsSync(fileURLToPath(typeScriptCandidate))) {
          return nextResolve(specifier.replace(/\.js$/, '.ts'), context);
        }
      }
      return nextResolve(specifier, context);
    },
  });
  try {
    return await import('./services.js');
  } finally {
    hooks.deregister();
  }
}

export default async function globalSetup(): Promise<void> {
  const { startMongo, startRedis, startRedisCluster, TEST_REDIS_DATABASES } = await loadServices();
  const scope = globalThis as GlobalWithHandles;
  const handles: TestServiceHandles = {};
  scope[handlesKey] = handles;
  const [redis, mongo] = await Promise.allSettled([startRedis(['--databases', String(TEST_REDIS_DATABASES)]), startMongo()]);
  if (redis.status === 'fulfilled') handles.redis = redis.value;
  if (mongo.status === 'fulfilled') handles.mongo = mongo.value;
  if (redis.status === 'rejected' || mongo.status === 'rejected') {
    await Promise.allSettled([handles.redis?.stop(), handles.mongo?.stop()]);
    const reasons = [redis, mongo]
      .filter((result): result is PromiseRejectedResult => result.status === 'rejected')
      .map((result) => (result.reason instanceof Error ? result.reason.message : String(result.reason)));
    throw new Error(`test services failed to start:\n${reasons.join('\n')}`);
  }
  process.env.TEST_REDIS_URL = redis.value.url;
  process.env.TEST_MONGODB_URI = mongo.value.uri;
  // TEST_REDIS_CLUSTER=1 (`npm run test:cluster`): every harness runs its service on a three-primary Redis Cluster.
  if (process.env.TEST_REDIS_CLUSTER === '1') {
    handles.cluster = await startRedisCluster();
    process.env.TEST_REDIS_CLUSTER_NODES = handles.cluster.nodes;
    process.env.TEST_REDIS_CLUSTER_PASSWORD = handles.cluster.password;
  }
}
