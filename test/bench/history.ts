/**
 * Stored history for the "≥ 50k stored messages" throughput phase, seeded quickly and without
 * knowing the pipeline's schema: one real conversation of a few turns runs through the service,
 * then everything it left — MongoDB documents (`insertMany` batches) and Redis keys (DUMP /
 * RESTORE, plus its members of shared sorted sets, sets and hashes such as BullMQ's completed
 * jobs) — is copied under other numbers until the transcript holds the wanted message count.
 * The template's number (`MARKER`) is in its address and its message SIDs, so a copy replaces
 * it everywhere; a document whose `_id` doesn't carry it gets a suffix.
 */
import type { Redis } from 'ioredis';
import mongoose from 'mongoose';

/** The template conversation's number digits (whatsapp:+17770000000). */
const MARKER = '17770000000';
export const TEMPLATE_NUMBER = `whatsapp:+${MARKER}`;
/** Copies are numbered 1777xxxxxxx. */
const copyDigits = (index: number) => `1777${String(index).padStart(7, '0')}`;
/** A Twilio-shaped SID (SM + 32 hex digits) carrying the template number. */
export const templateSid = (turn: number) => `SM${MARKER}${String(turn).padStart(21, '0')}`;

type Value = unknown;

function replaceDeep(value: Value, to: string): Value {
  if (typeof value === 'string') return value.replaceAll(MARKER, to);
  if (Array.isArray(value)) return value.map((item: Value) => replaceDeep(item, to));
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceDeep(item, to)]));
  }
  return value;
}

const containsMarker = (value: Value): boolean => {
  if (typeof value === 'string') return value.includes(MARKER);
  if (Array.isArray(value)) return value.some(containsMarker);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) return Object.values(value).some(containsMarker);
  return false;
};

/** FerretDB on SQLite answers SQLITE_BUSY while the pipeline writes too: a batch is tried again (a copy inserted twice is a duplicate key, skipped). */
async function insertWithRetry(insert: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await insert();
      return;
    } catch (error) {
      const duplicatesOnly =
        error instanceof mongoose.mongo.MongoBulkWriteError &&
        error.writeErrors instanceof Array &&
        error.writeErrors.length > 0 &&
        error.writeErrors.every((item) => item.code === 11000);
      if (duplicatesOnly) return;
      if (attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

export interface SeedResult {
  conversations: number;
  documents: Record<string, number>;
  redisKeys: number;
  seconds: number;
}

/**
 * Copies the template conversation until the `messages` collection (or, if the pipeline has
 * none, the collection with the most template documents) holds at least `targetMessages`.
 */
export async function seedHistory(mongoUri: string, redis: Redis, targetMessages: number): Promise<SeedResult> {
  const started = performance.now();
  const connection = await mongoose.createConnection(mongoUri.replace(/([?&])monitorCommands=true&?/, '$1')).asPromise();
  const database = connection.db;
  if (!database) throw new Error('no database');
  const templates = new Map<string, Record<string, Value>[]>();
  for (const { name } of await database.listCollections().toArray()) {
    const documents = (await database.collection(name).find({}).toArray()) as Record<string, Value>[];
    const own = documents.filter(containsMarker);
    if (own.length > 0) templates.set(name, own);
  }
  const messageCollection = templates.has('messages') ? 'messages' : [...templates].sort((a, b) => b[1].length - a[1].length)[0]?.[0];
  const perConversation = messageCollection ? (templates.get(messageCollection)?.length ?? 0) : 0;
  if (!messageCollection || perConversation === 0) throw new Error('the template conversation left no documents to copy');
  const existing = await database.collection(messageCollection).countDocuments();
  const conversations = Math.max(0, Math.ceil((targetMessages - existing) / perConversation));

  // MongoDB: insertMany in batches of ~1000 documents, copy by copy.
  const documents: Record<string, number> = {};
  for (const [name, own] of templates) {
    const collection = database.collection(name);
    let batch: Record<string, Value>[] = [];
    for (let copy = 1; copy <= conversations; copy += 1) {
      const to = copyDigits(copy);
      for (const document of own) {
        const clone = replaceDeep(document, to) as Record<string, Value>;
        if (clone._id === document._id || !containsMarker(document._id)) {
          clone._id = typeof document._id === 'string' ? `${document._id}~${copy}` : new mongoose.Types.ObjectId();
        }
        batch.push(clone);
      }
      if (batch.length >= 500 || copy === conversations) {
        await insertWithRetry(() => collection.insertMany(batch, { ordered: false }));
        batch = [];
      }
    }
    documents[name] = await collection.countDocuments();
  }
  await connection.close();

  // Redis: the template's own keys copied whole; its members of shared keys added per copy.
  const own: { key: string; ttl: number; dump: Buffer }[] = [];
  const shared: { key: string; type: string; members: [string, string][] }[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', '1000');
    cursor = next;
    for (const key of keys) {
      if (key.includes(MARKER)) {
        const [dump, ttl] = await Promise.all([redis.dumpBuffer(key), redis.pttl(key)]);
        if (dump) own.push({ key, ttl: Math.max(0, ttl), dump });
        continue;
      }
      const type = await redis.type(key);
      let members: [string, string][] = [];
      if (type === 'zset') {
        const flat = await redis.zrange(key, '0', '-1', 'WITHSCORES');
        for (let index = 0; index < flat.length; index += 2) members.push([flat[index] ?? '', flat[index + 1] ?? '0']);
      } else if (type === 'set') members = (await redis.smembers(key)).map((member) => [member, '']);
      else if (type === 'hash') members = Object.entries(await redis.hgetall(key));
      members = members.filter(([member]) => member.includes(MARKER));
      if (members.length > 0) shared.push({ key, type, members });
    }
  } while (cursor !== '0');
  let redisKeys = 0;
  for (let copy = 1; copy <= conversations; copy += 50) {
    const pipeline = redis.pipeline();
    for (let index = copy; index < Math.min(copy + 50, conversations + 1); index += 1) {
      const to = copyDigits(index);
      for (const { key, ttl, dump } of own) {
        pipeline.restore(key.replaceAll(MARKER, to), ttl, dump, 'REPLACE');
        redisKeys += 1;
      }
      for (const { key, type, members } of shared) {
        for (const [member, value] of members) {
          const copied = member.replaceAll(MARKER, to);
          if (type === 'zset') pipeline.zadd(key, value, copied);
          else if (type === 'set') pipeline.sadd(key, copied);
          else pipeline.hset(key, copied, value.replaceAll(MARKER, to));
        }
      }
    }
    await pipeline.exec();
  }
  return { conversations, documents, redisKeys, seconds: (performance.now() - started) / 1000 };
}

/** How many documents the pipeline's `messages` collection holds (the stored-data size a phase runs on). */
export async function countStoredMessages(mongoUri: string): Promise<number> {
  const connection = await mongoose.createConnection(mongoUri.replace(/([?&])monitorCommands=true&?/, '$1')).asPromise();
  try {
    return (await connection.db?.collection('messages').countDocuments()) ?? 0;
  } finally {
    await connection.close();
  }
}
