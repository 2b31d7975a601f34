// Self-test of test/support/services.ts and the global setup: the run's redis answers PING
// through ioredis, the run's MongoDB-wire server answers ping and stores a document through
// mongoose, and a second redis can be started and stopped on its own port. A server is started
// only once the process listening on its port is the one spawned: a port found free may be taken
// by another suite's server first, which would answer the start-up probe in its place.
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { createConnection } from 'node:net';
import { startRedis } from '../support/services.js';

function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

function requiredEnvironment(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: is the jest globalSetup configured?`);
  return value;
}

describe('test services', () => {
  test('the run-wide redis answers PING', async () => {
    const redis = new Redis(requiredEnvironment('TEST_REDIS_URL'), { maxRetriesPerRequest: 1 });
    try {
      expect(await redis.ping()).toBe('PONG');
      await redis.set('infra:probe', 'value');
      expect(await redis.get('infra:probe')).toBe('value');
      expect(await redis.config('GET', 'save')).toEqual(['save', '']);
      expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
    } finally {
      redis.disconnect();
    }
  });

  test('the run-wide MongoDB-wire server answers ping and stores documents through mongoose', async () => {
    const connection = await mongoose.createConnection(requiredEnvironment('TEST_MONGODB_URI'), { dbName: `infra_${process.pid}` }).asPromise();
    try {
      const database = connection.db;
      if (database === undefined) throw new Error('mongoose connection has no db');
      expect((await database.admin().ping()).ok).toBe(1);
      const Probe = connection.model('Probe', new mongoose.Schema({ text: String, at: Date }));
      await Probe.create({ text: 'hello', at: new Date() });
      const found = await Probe.findOne({ text: 'hello' }).lean();
      expect(found?.text).toBe('hello');
      await database.dropDatabase();
    } finally {
      await connection.close();
    }
  });

  test('startRedis gives an independent server that stop() ends', async () => {
    const redisServer = await startRedis();
    expect(redisServer.url).toBe(`redis://127.0.0.1:${redisServer.port}`);
    expect(redisServer.url).not.toBe(process.env.TEST_REDIS_URL);
    const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    redis.on('error', () => {});
    await redis.connect();
    expect(await redis.ping()).toBe('PONG');
    redis.disconnect();
    await redisServer.stop();
    await expect(tcpConnect(redisServer.port)).rejects.toThrow(/ECONNREFUSED/);
  });

  test('a redis-server whose port another server holds is not taken for it: a fresh port, a server of its own', async () => {
    const first = await startRedis();
    const second = await startRedis([], first.port);
    const [one, two] = [new Redis(first.url, { maxRetriesPerRequest: 1 }), new Redis(second.url, { maxRetriesPerRequest: 1 })];
    try {
      expect(second.port).not.toBe(first.port);
      await one.set('infra:owner', 'first');
      expect(await two.get('infra:owner')).toBeNull();
    } finally {
      one.disconnect();
      two.disconnect();
      await second.stop();
      await first.stop();
    }
  });
});
