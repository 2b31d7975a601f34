/**
 * The knowledge sub-domain's records and limits: where content comes from (a crawled source,
 * an uploaded document, a FAQ entry), the pages a crawl found, and the chunks the index serves.
 * A chunk belongs to one owner (`doc:<id>` for a document or FAQ entry, `page:<id>` for a
 * crawled page); an owner is replaced or removed as a whole.
 */
import { z } from 'zod';
import { KnowledgeSourceSchema } from '../config.js';

/** Who may be answered from a source: widget site keys and/or channel ids (`whatsapp`); empty = everyone. */
export const AudienceSchema = z.array(z.string().trim().min(1).max(80)).max(20);

export const SourceInputSchema = KnowledgeSourceSchema;
export type SourceInput = z.infer<typeof SourceInputSchema>;

export interface ChunkRecord {
  /** `<owner>#<n>` */
  _id: string;
  owner: string;
  title: string;
  /** Headings above the passage, outermost first (` › `-joined when shown). */
  headingPath: string[];
  /** The page's URL (final, canonical) or the document's name. */
  url: string;
  text: string;
  /** Audience; empty = everyone. */
  sites: string[];
  language?: string | undefined;
  /** The chunk's embedding (MODEL_EMBEDDING): float32 values' bytes, a BSON binary in MongoDB. */
  vector?: Uint8Array | undefined;
  /** The `provider:model` that made `vector`. */
  embeddingModel?: string | undefined;
}

export interface OwnerRecord {
  /** `doc:<id>` or `page:<id>` */
  _id: string;
  kind: 'faq' | 'document' | 'page';
  title: string;
  url: string;
  chunkIds: string[];
  /** sha256 of the extracted text: a re-crawl that finds the same text writes nothing. */
  hash: string;
  sourceId?: string | undefined;
  sites: string[];
  /** Conditional-request validators from the last fetch. */
  etag?: string | undefined;
  lastModified?: string | undefined;
  updatedAt: Date;
  /** A crawled page's followable links (same origin), so a re-crawl answered 304 still follows them. */
  links?: string[] | undefined;
  bytes?: number | undefined;
  contentType?: string | undefined;
}

export interface SourceRecord extends SourceInput {
  _id: string;
  /** `config` (from KNOWLEDGE_SOURCES) or `admin`. */
  origin: 'config' | 'admin';
  pageIds: string[];
  lastCrawlAt?: Date | undefined;
  lastCrawlPages?: number | undefined;
  /** `ok`, `errors` (some pages failed), `failed` (robots.txt or the start page unreadable: the last pages kept). */
  lastCrawlOutcome?: 'ok' | 'errors' | 'failed' | undefined;
  errors: string[];
}

/** One passage as retrieval returns it. */
export interface Passage {
  chunkId: string;
  title: string;
  headingPath: string[];
  url: string;
  text: string;
  score: number;
}

/** Where a turn is answered, for a source's audience. */
export interface Audience {
  site?: string | undefined;
  channel?: string | undefined;
}
