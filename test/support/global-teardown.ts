// Jest globalTeardown: stops the redis-server and MongoDB-wire server that global-setup.ts
// started for the run (a MONGODB_URI given from outside is left alone), and the Redis Cluster
// with TEST_REDIS_CLUSTER=1. It imports nothing relative: like globalSetup, Jest loads it
// without moduleNameMapper.
interface StoppableHandle {
  stop(): Promise<void>;
}

const handlesKey = Symbol.for('wa-assistant.test-services');
type GlobalWithHandles = typeof globalThis & { [handlesKey]?: { redis?: StoppableHandle; mongo?: StoppableHandle; cluster?: StoppableHandle } };

export default async function globalTeardown(): Promise<void> {
  const scope = globalThis as GlobalWithHandles;
  const handles = scope[handlesKey];
  delete scope[handlesKey];
  if (handles === undefined) return;
  await Promise.allSettled([handles.redis?.stop(), handles.mongo?.stop(), handles.cluster?.stop()]);
}
