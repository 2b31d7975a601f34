/**
 * MongoDB is the knowledge's store of record: `knowledge_sources`, `knowledge_documents`
 * (uploads and FAQ entries), `knowledge_pages` (what crawls found) and `knowledge_chunks` (the
 * passages the index serves). Every write and every read of one record goes by `_id` (FerretDB
 * 1.x pushes down nothing else), at most 20 statements per command; the only scans are the
 * index build at start, the owners' hashes each process's index check reads (owner records only,
 * two fields), and the operator's listing, never near a turn.
 */
import type { Connection } from 'mongoose';
import type { mongo } from 'mongoose';
import type { ChunkRecord, OwnerRecord, SourceRecord } from './model.js';

const MAX_STATEMENTS_PER_COMMAND = 20;
const PARALLEL_READS = 10;

export interface KnowledgeStore {
  /** Writes an owner's chunks, then the owner, then removes its chunks that no longer exist. */
  putOwner(owner: OwnerRecord, chunks: readonly ChunkRecord[]): Promise<void>;
  /** Rewrites an owner's record alone (validators, links), its chunks unchanged. */
  updateOwner(owner: OwnerRecord): Promise<void>;
  /** Removes an owner and its chunks; false when it did not exist. */
  removeOwner(ownerId: string): Promise<OwnerRecord | undefined>;
  getOwner(ownerId: string): Promise<OwnerRecord | undefined>;
  /** An owner's chunks, read one `_id` at a time. */
  chunksOf(owner: OwnerRecord): Promise<ChunkRecord[]>;
  /** Every chunk (the index build at start). */
  allChunks(): AsyncIterable<ChunkRecord>;
  listOwners(kind: 'documents' | 'pages'): Promise<OwnerRecord[]>;
  /** Every owner's text hash and chunk ids (what the index should hold), read with those fields only. */
  ownerHashes(): Promise<Map<string, { hash: string; chunkIds: string[] }>>;
  putSource(source: SourceRecord): Promise<void>;
  getSource(id: string): Promise<SourceRecord | undefined>;
  listSources(): Promise<SourceRecord[]>;
  removeSource(id: string): Promise<void>;
}

const ownerCollection = (ownerId: string) => (ownerId.startsWith('page:') ? 'knowledge_pages' : 'knowledge_documents');

async function inBatches<T>(items: readonly T[], size: number, run: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < items.length; start += size) await run(items.slice(start, start + size));
}

export function createKnowledgeStore(connection: Connection): KnowledgeStore {
  const collection = <T extends { _id: string }>(name: string) => connection.collection<T>(name) as unknown as mongo.Collection<T>;
  const chunks = () => collection<ChunkRecord>('knowledge_chunks');
  const sources = () => collection<SourceRecord>('knowledge_sources');
  const owners = (ownerId: string) => collection<OwnerRecord>(ownerCollection(ownerId));

  const getOwner = async (ownerId: string) => (await owners(ownerId).findOne({ _id: ownerId })) ?? undefined;
  const deleteChunks = (ids: readonly string[]) =>
    inBatches(ids, MAX_STATEMENTS_PER_COMMAND, (batch) => chunks().bulkWrite(batch.map((_id) => ({ deleteOne: { filter: { _id } } }))));

  return {
    async putOwner(owner, list) {
      const previous = await getOwner(owner._id);
      await inBatches(list, MAX_STATEMENTS_PER_COMMAND, (batch) =>
        chunks().bulkWrite(batch.map((chunk) => ({ replaceOne: { filter: { _id: chunk._id }, replacement: chunk, upsert: true } }))),
      );
      await owners(owner._id).replaceOne({ _id: owner._id }, owner, { upsert: true });
      const kept = new Set(list.map((chunk) => chunk._id));
      await deleteChunks((previous?.chunkIds ?? []).filter((id) => !kept.has(id)));
    },

    async updateOwner(owner) {
      await owners(owner._id).replaceOne({ _id: owner._id }, owner, { upsert: true });
    },

    async removeOwner(ownerId) {
      const owner = await getOwner(ownerId);
      if (!owner) return undefined;
      await deleteChunks(owner.chunkIds);
      await owners(ownerId).deleteOne({ _id: ownerId });
      return owner;
    },

    getOwner,

    async chunksOf(owner) {
      const found: ChunkRecord[] = [];
      await inBatches(owner.chunkIds, PARALLEL_READS, async (batch) => {
        const read = await Promise.all(batch.map((_id) => chunks().findOne({ _id })));
        for (const chunk of read) if (chunk) found.push(chunk);
      });
      return found;
    },

    async *allChunks() {
      for await (const chunk of chunks().find({})) yield chunk;
    },

    async listOwners(kind) {
      return collection<OwnerRecord>(kind === 'pages' ? 'knowledge_pages' : 'knowledge_documents')
        .find({})
        .toArray();
    },

    async ownerHashes() {
      const found = new Map<string, { hash: string; chunkIds: string[] }>();
      for (const name of ['knowledge_documents', 'knowledge_pages']) {
        const cursor = collection<OwnerRecord>(name).find({}, { projection: { _id: 1, hash: 1, chunkIds: 1 } });
        for await (const owner of cursor) found.set(owner._id, { hash: owner.hash, chunkIds: owner.chunkIds });
      }
      return found;
    },

    async putSource(source) {
      await sources().replaceOne({ _id: source._id }, source, { upsert: true });
    },
    async getSource(id) {
      return (await sources().findOne({ _id: id })) ?? undefined;
    },
    async listSources() {
      return sources().find({}).toArray();
    },
    async removeSource(id) {
      await sources().deleteOne({ _id: id });
    },
  };
}
