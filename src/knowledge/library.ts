/**
 * What changes the knowledge: FAQ entries, uploaded documents and crawled pages are cleaned
 * (steering text dropped and logged), chunked by heading, written to MongoDB, applied to this
 * process's index and announced on the change stream for every other process. Removal goes the
 * same way. A page whose text hash did not change is not written again. A change whose
 * announcement fails stays written (MongoDB is the record): the other processes' periodic check
 * finds it (`index-sync.ts`).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { announceChange, type KnowledgeChange } from './changes.js';
import { chunkText } from './chunking.js';
import type { Embedder } from './embeddings.js';
import type { HeldOwners } from './held-owners.js';
import type { KnowledgeIndex } from './knowledge-index.js';
import type { ChunkRecord, OwnerRecord } from './model.js';
import { dropSteering } from './steering.js';
import type { KnowledgeStore } from './store.js';

export const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
const textHash = (text: string) => createHash('sha256').update(text).digest('hex');

export interface OwnerContent {
  ownerId: string;
  kind: OwnerRecord['kind'];
  title: string;
  url: string;
  text: string;
  sites: readonly string[];
  language?: string | undefined;
  extra?: Partial<Pick<OwnerRecord, 'sourceId' | 'etag' | 'lastModified' | 'bytes' | 'contentType' | 'links'>>;
}

export interface KnowledgeLibrary {
  /** Cleans, chunks, stores, indexes and announces one owner; `unchanged` when its hash is the stored one. */
  put(content: OwnerContent): Promise<{ chunks: number; dropped: number; unchanged: boolean }>;
  remove(ownerId: string): Promise<boolean>;
  /** Applies a change another process announced (reads the owner back by `_id`). */
  apply(change: { op: 'upsert' | 'delete'; owner: string }): Promise<void>;
  /**
   * Embeds the chunks of these owners that lack MODEL_EMBEDDING's vectors (content added before it
   * was set, or while the provider failed): one process at a time (a Redis lock), owner by owner,
   * written and announced as any change; stops at the first failure. Returns the owners embedded.
   */
  embedMissing(owners: readonly string[]): Promise<number>;
}

const BACKFILL_LOCK = `${KEY_PREFIX}:knowledge:embed-backfill`;
const BACKFILL_LOCK_MS = 30 * 60_000;

export function createKnowledgeLibrary(dependencies: {
  store: KnowledgeStore;
  index: KnowledgeIndex;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
  /** MODEL_EMBEDDING: chunks are embedded before they are written. */
  embedder?: Embedder | undefined;
  /** Told of each owner this process's index takes in or drops, with the hash it holds. */
  held?: HeldOwners | undefined;
}): KnowledgeLibrary {
  const { store, index, redis, logger, metrics, embedder, held } = dependencies;

  const announce = async (change: KnowledgeChange) => {
    try {
      await announceChange(redis, change);
    } catch (error) {
      metrics.increment('knowledge_announce_failed_total');
      logger.warn('knowledge-announce-failed', { ...change, error });
    }
  };

  /** The chunks with their vectors; without them (logged) when the provider fails, so the owner is written lexically and marked to be embedded on its next put. */
  const embedded = async (chunks: ChunkRecord[], ownerId: string): Promise<{ chunks: ChunkRecord[]; complete: boolean }> => {
    if (!embedder || chunks.length === 0) return { chunks, complete: true };
    try {
      return { chunks: await embedder.embedChunks(chunks), complete: true };
    } catch (error) {
      metrics.increment('knowledge_embedding_failed_total', { stage: 'ingest' });
      logger.warn('knowledge-embedding-failed', { owner: ownerId, chunks: chunks.length, error });
      return { chunks, complete: false };
    }
  };

  const apply: KnowledgeLibrary['apply'] = async (change) => {
    const owner = change.op === 'upsert' ? await store.getOwner(change.owner) : undefined;
    if (!owner) {
      await index.removeOwner(change.owner);
      held?.indexed(change.owner, undefined);
      return;
    }
    await index.replaceOwner(owner._id, await store.chunksOf(owner));
    held?.indexed(owner._id, owner.hash);
  };

  return {
    async put(content) {
      const { text, dropped } = dropSteering(content.text);
      if (dropped.length > 0) {
        metrics.increment('knowledge_steering_dropped_total', {}, dropped.length);
        logger.warn('knowledge-steering-dropped', { owner: content.ownerId, url: content.url, count: dropped.length, samples: dropped.slice(0, 3) });
      }
      // With MODEL_EMBEDDING its label is part of the hash: a new model re-embeds a page on its next crawl.
      const hash = textHash(`${content.title}\n${content.sites.join(',')}\n${embedder ? `${embedder.label}\n` : ''}${text}`);
      const previous = await store.getOwner(content.ownerId);
      if (previous?.hash === hash) {
        if (content.extra) await store.updateOwner({ ...previous, ...content.extra, updatedAt: new Date() });
        return { chunks: previous.chunkIds.length, dropped: dropped.length, unchanged: true };
      }
      const cut = chunkText(text, { owner: content.ownerId, title: content.title, url: content.url, sites: content.sites, language: content.language });
      const { chunks, complete } = await embedded(cut, content.ownerId);
      const owner: OwnerRecord = {
        _id: content.ownerId,
        kind: content.kind,
        title: content.title,
        url: content.url,
        chunkIds: chunks.map((chunk) => chunk._id),
        hash: complete ? hash : `${hash}:unembedded`,
        sites: [...content.sites],
        updatedAt: new Date(),
        ...content.extra,
      };
      await store.putOwner(owner, chunks);
      await index.replaceOwner(owner._id, chunks);
      held?.indexed(owner._id, owner.hash);
      await announce({ op: 'upsert', owner: owner._id });
      metrics.increment('knowledge_changes_total', { kind: content.kind, op: 'upsert' });
      return { chunks: chunks.length, dropped: dropped.length, unchanged: false };
    },

    async remove(ownerId) {
      const removed = await store.removeOwner(ownerId);
      await index.removeOwner(ownerId);
      held?.indexed(ownerId, undefined);
      await announce({ op: 'delete', owner: ownerId });
      if (removed) metrics.increment('knowledge_changes_total', { kind: removed.kind, op: 'delete' });
      return removed !== undefined;
    },

    apply,

    async embedMissing(owners) {
      if (!embedder || owners.length === 0) return 0;
      const token = newId('backfill');
      if ((await redis.set(BACKFILL_LOCK, token, 'PX', BACKFILL_LOCK_MS, 'NX')) !== 'OK') return 0;
      let done = 0;
      try {
        for (const ownerId of owners) {
          const owner = await store.getOwner(ownerId);
          const chunks = owner ? await store.chunksOf(owner) : [];
          if (!owner || chunks.every((chunk) => chunk.embeddingModel === embedder.label)) continue;
          const result = await embedded(chunks, ownerId);
          if (!result.complete) break;
          await store.putOwner(owner, result.chunks);
          await index.replaceOwner(ownerId, result.chunks);
          held?.indexed(ownerId, owner.hash);
          await announce({ op: 'upsert', owner: ownerId });
          done += 1;
        }
      } finally {
        if ((await redis.get(BACKFILL_LOCK)) === token) await redis.del(BACKFILL_LOCK);
      }
      return done;
    },
  };
}
