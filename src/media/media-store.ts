/**
 * Customers' media (photos, voice notes, documents) in MongoDB GridFS, through mongoose's
 * driver, so a transcript link can show them later and the bytes never sit in Redis or a job.
 * `put` streams: it sniffs the first bytes against the allowlist (`content-check.ts`), counts
 * as it writes and aborts past the size cap (the chunks written so far are removed), so no
 * whole file is buffered here. Ids are GridFS `_id`s as 24 hex characters; every read is by
 * `_id` (the file document), and the chunks are read only when a file is opened. Retention
 * follows MEDIA_RETENTION_DAYS (`purgeOlderThan`, called by the scheduled purge).
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import mongoose, { type Connection } from 'mongoose';
import { checkContent, MediaRejectedError, SNIFF_BYTES, type MediaKind } from './content-check.js';

const { Binary, GridFSBucket, MongoNotConnectedError, ObjectId } = mongoose.mongo;
type Collection = ReturnType<InstanceType<typeof mongoose.mongo.Db>['collection']>;
type FilesCollection = InstanceType<typeof mongoose.mongo.Collection<StoredFile>>;
type GridFSBucketInstance = InstanceType<typeof GridFSBucket>;
type ObjectIdInstance = InstanceType<typeof ObjectId>;

/** The GridFS bucket: collections `media.files` and `media.chunks`. */
const BUCKET = 'media';
const CHUNK_BYTES = 255 * 1024;

/** One stored media, as its file document describes it. */
export interface MediaInfo {
  id: string;
  conversationId: string;
  /** The type the bytes were found to be (sniffed), not what the sender declared. */
  contentType: string;
  kind: MediaKind;
  size: number;
  filename?: string;
  /** The channel it arrived on (`whatsapp`, `web`). */
  channel?: string;
  uploadedAt: Date;
  /** A voice note's transcription, once made. */
  transcription?: string;
}

export interface PutMediaInput {
  /** What the sender declared; the bytes must agree with its kind. */
  contentType: string;
  /** The conversation key its message will carry (`InboundMessage.conversationKey`): a message may only reference its own conversation's media. */
  conversationId: string;
  filename?: string;
  channel?: string;
  /** This file's cap (defaults to the store's `maxBytes`). */
  maxBytes?: number;
  /** A fixed id (see `mediaIdFor`): a retried fetch finds what an earlier attempt stored. */
  id?: string;
  /** Told each chunk as it is stored: a caller that needs the bytes keeps them without reading them back. */
  onChunk?: (chunk: Buffer) => void;
}

export interface MediaStore {
  /**
   * Streams `source` into the store. Throws `MediaRejectedError` with `unsupported-type` (the
   * first bytes are not an allowed type of the declared kind) or `too-large` (past the cap:
   * reading stops, what was written is removed). Anything else the source throws is rethrown.
   */
  put(source: AsyncIterable<Uint8Array> | Readable, input: PutMediaInput): Promise<MediaInfo>;
  /** A file's description by id; undefined for an unknown or malformed id. */
  info(id: string): Promise<MediaInfo | undefined>;
  /** A file's bytes as a stream, with its description; undefined when there is no such file. */
  open(id: string): Promise<{ info: MediaInfo; stream: Readable } | undefined>;
  /** Keeps a voice note's transcription on its file (a retried turn does not transcribe again). */
  setTranscription(id: string, transcription: string): Promise<void>;
  /** Deletes files uploaded before `cutoff`; returns how many. */
  purgeOlderThan(cutoff: Date): Promise<number>;
  /** Deletes a file and every chunk of it (also chunks left without a file record); nothing for an unknown id. */
  remove(id: string): Promise<void>;
  /**
   * Deletes chunks whose file has no record (an upload cut off by a crash) when the newest chunk
   * of that file is older than `cutoff`; returns how many files' chunks. Reads the whole chunks
   * collection (its `_id` and `files_id` only): a scheduled sweep, never on a request's path.
   */
  sweepOrphanChunks(cutoff: Date): Promise<number>;
}

/** A new media id (a GridFS `_id` as 24 hex characters), for a caller that must know it before storing. */
export function newMediaId(): string {
  return new ObjectId().toHexString();
}

interface FileMetadata {
  conversationId?: string;
  contentType?: string;
  kind?: MediaKind;
  declaredContentType?: string;
  channel?: string;
  transcription?: string;
  /** `keyed`: the chunks' `_id`s are `<file id>:<n>` (read by `_id`); absent for a file GridFS's own writer stored. */
  chunks?: 'keyed';
}

/** A file document as stored in `media.files` (GridFS's shape). */
interface StoredFile {
  _id: ObjectIdInstance;
  length: number;
  chunkSize: number;
  uploadDate: Date;
  filename: string;
  metadata?: FileMetadata;
}

function chunkCount(file: StoredFile): number {
  return Math.ceil(file.length / file.chunkSize);
}

const HEX_ID = /^[0-9a-f]{24}$/;

/** A stable media id for a key (e.g. a channel message id and the media's index). */
export function mediaIdFor(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 24);
}

function objectId(id: string): ObjectIdInstance | undefined {
  return HEX_ID.test(id) ? ObjectId.createFromHexString(id) : undefined;
}

function toInfo(file: { _id: unknown; length: number; uploadDate: Date; filename: string; metadata?: unknown }): MediaInfo {
  const metadata = (file.metadata ?? {}) as FileMetadata;
  return {
    id: String(file._id),
    conversationId: metadata.conversationId ?? '',
    contentType: metadata.contentType ?? 'application/octet-stream',
    kind: metadata.kind ?? 'document',
    size: file.length,
    ...(file.filename ? { filename: file.filename } : {}),
    ...(metadata.channel ? { channel: metadata.channel } : {}),
    uploadedAt: file.uploadDate,
    ...(metadata.transcription !== undefined ? { transcription: metadata.transcription } : {}),
  };
}

/** A chunk's `_id`: the file's id and its index, so a file's chunks are read and deleted by `_id` (FerretDB pushes down nothing else). */
function chunkId(fileId: ObjectIdInstance, n: number): string {
  return `${fileId.toHexString()}:${n}`;
}

/** Chunk ids in groups of at most 20 (one delete command each). */
function* chunkIdGroups(fileId: ObjectIdInstance, count: number): Generator<string[]> {
  for (let first = 0; first < count; first += 20) {
    yield Array.from({ length: Math.min(20, count - first) }, (_, offset) => chunkId(fileId, first + offset));
  }
}

/**
 * Writes a file's chunks as GridFS does (`files_id`, `n`, `data`, 255 KiB each; any GridFS reader
 * reads them), but keyed `<file id>:<n>` and stamped with the time they were written, one insert
 * awaited at a time (the source is read no faster than the store takes it).
 */
function createChunkWriter(chunks: Collection, fileId: ObjectIdInstance) {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let count = 0;
  const flush = async (bytes: Buffer) => {
    const n = count;
    count += 1;
    // By `_id`, replacing: a retried fetch (a fixed id) overwrites what a crashed attempt left.
    const _id = chunkId(fileId, n) as never;
    await chunks.replaceOne({ _id }, { files_id: fileId, n, data: new Binary(bytes), at: new Date() }, { upsert: true });
  };
  return {
    get count() {
      return count;
    },
    async write(chunk: Buffer) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      while (pendingBytes >= CHUNK_BYTES) {
        const whole = Buffer.concat(pending);
        pending = [whole.subarray(CHUNK_BYTES)];
        pendingBytes = whole.length - CHUNK_BYTES;
        await flush(whole.subarray(0, CHUNK_BYTES));
      }
    },
    async end() {
      if (pendingBytes > 0) await flush(Buffer.concat(pending));
      pending = [];
      pendingBytes = 0;
    },
  };
}

/** Streams `source` into the store as keyed chunks, then its file document (see `MediaStore.put`). */
async function putMedia(
  store: { collections: () => Promise<{ files: FilesCollection; chunks: Collection }>; removeChunks: (id: ObjectIdInstance, count: number) => Promise<void> },
  defaultMaxBytes: number,
  source: AsyncIterable<Uint8Array> | Readable,
  input: PutMediaInput,
): Promise<MediaInfo> {
  const maxBytes = input.maxBytes ?? defaultMaxBytes;
  const id = input.id === undefined ? new ObjectId() : objectId(input.id);
  if (!id) throw new Error(`invalid media id ${input.id}`);
  const { files, chunks } = await store.collections();
  const writer = createChunkWriter(chunks, id);
  let head: Buffer = Buffer.alloc(0);
  let checked: { contentType: string; kind: MediaKind } | undefined;
  let size = 0;
  const write = async (chunk: Buffer) => {
    input.onChunk?.(chunk);
    await writer.write(chunk);
  };
  try {
    for await (const piece of source as AsyncIterable<Uint8Array>) {
      const chunk = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      size += chunk.length;
      if (size > maxBytes) throw new MediaRejectedError('too-large', `media larger than ${maxBytes} bytes`);
      if (!checked) {
        head = Buffer.concat([head, chunk]);
        if (head.length < SNIFF_BYTES) continue;
        checked = checkContent(input.contentType, head);
        await write(head);
        continue;
      }
      await write(chunk);
    }
    if (!checked) {
      checked = checkContent(input.contentType, head);
      await write(head);
    }
    await writer.end();
    // The file document last: a file is readable only once every chunk of it is stored.
    const metadata: FileMetadata = {
      conversationId: input.conversationId,
      contentType: checked.contentType,
      kind: checked.kind,
      declaredContentType: input.contentType,
      ...(input.channel ? { channel: input.channel } : {}),
      chunks: 'keyed',
    };
    const file = { length: size, chunkSize: CHUNK_BYTES, uploadDate: new Date(), filename: input.filename ?? '', metadata };
    await files.replaceOne({ _id: id }, file, { upsert: true });
  } catch (error) {
    // Removes the chunks written so far (no insert is in flight: each one is awaited).
    await store.removeChunks(id, writer.count).catch(() => undefined);
    if (source && typeof (source as Readable).destroy === 'function') (source as Readable).destroy();
    throw error;
  }
  return {
    id: id.toHexString(),
    conversationId: input.conversationId,
    contentType: checked.contentType,
    kind: checked.kind,
    size,
    ...(input.filename ? { filename: input.filename } : {}),
    ...(input.channel ? { channel: input.channel } : {}),
    uploadedAt: new Date(),
  };
}

export function createMediaStore(connection: Connection, options: { maxBytes: number }): MediaStore {
  let bucket: GridFSBucketInstance | undefined;
  const database = async () => {
    // Before the first connection (a process started during an outage) it waits like mongoose's
    // own operations do; a failed connection attempt throws (an outage: the turn is retried).
    const db = connection.db ?? (await connection.asPromise()).db;
    if (!db) throw new MongoNotConnectedError('the MongoDB connection is not open');
    return db;
  };
  const gridfs = async (): Promise<GridFSBucketInstance> => {
    bucket ??= new GridFSBucket(await database(), { bucketName: BUCKET, chunkSizeBytes: CHUNK_BYTES });
    return bucket;
  };
  const collections = async () => {
    const db = await database();
    return { files: db.collection<StoredFile>(`${BUCKET}.files`), chunks: db.collection(`${BUCKET}.chunks`) };
  };
  const fileOf = async (_id: ObjectIdInstance) => (await collections()).files.findOne({ _id });

  const info = async (id: string): Promise<MediaInfo | undefined> => {
    const _id = objectId(id);
    if (!_id) return undefined;
    const file = await fileOf(_id);
    return file ? toInfo(file) : undefined;
  };

  /** Deletes a file's chunks: by `_id` when they are keyed by index, else (GridFS's own) by `files_id`. */
  const removeChunks = async (fileId: ObjectIdInstance, count: number | undefined) => {
    const { chunks } = await collections();
    if (count === undefined) {
      await chunks.deleteMany({ files_id: fileId });
      return;
    }
    for (const ids of chunkIdGroups(fileId, count)) await chunks.bulkWrite(ids.map((_id) => ({ deleteOne: { filter: { _id: _id as never } } })));
  };

  /** A keyed file's chunks read one by one by `_id`, in order. */
  async function* keyedChunks(fileId: ObjectIdInstance, count: number): AsyncGenerator<Buffer> {
    const { chunks } = await collections();
    for (let n = 0; n < count; n += 1) {
      const chunk = await chunks.findOne({ _id: chunkId(fileId, n) as never });
      if (!chunk) throw new Error(`media ${fileId.toHexString()} is missing chunk ${n}`);
      const data = chunk.data as InstanceType<typeof Binary>;
      const bytes = data.buffer.subarray(0, data.position);
      yield Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
  }

  return {
    put: (source, input) => putMedia({ collections, removeChunks }, options.maxBytes, source, input),

    info,

    async open(id) {
      const _id = objectId(id);
      const file = _id && (await fileOf(_id));
      if (!_id || !file) return undefined;
      const stream = file.metadata?.chunks === 'keyed' ? Readable.from(keyedChunks(_id, chunkCount(file))) : (await gridfs()).openDownloadStream(_id);
      return { info: toInfo(file), stream };
    },

    async setTranscription(id, transcription) {
      const _id = objectId(id);
      if (!_id) return;
      await connection.collection(`${BUCKET}.files`).updateOne({ _id }, { $set: { 'metadata.transcription': transcription } });
    },

    async remove(id) {
      const _id = objectId(id);
      if (!_id) return;
      const file = await fileOf(_id);
      await (await collections()).files.deleteOne({ _id });
      // A file without a record (an upload cut off by a crash) or written by GridFS: by `files_id`.
      await removeChunks(_id, file?.metadata?.chunks === 'keyed' ? chunkCount(file) : undefined);
    },

    async sweepOrphanChunks(cutoff) {
      const { files, chunks } = await collections();
      // files_id → when its newest chunk was written (`at`; a GridFS chunk's ObjectId time).
      const newest = new Map<string, { filesId: unknown; at: number }>();
      for await (const chunk of chunks.find({}, { projection: { _id: 1, files_id: 1, at: 1 } })) {
        const key = String(chunk.files_id);
        const at = chunk.at instanceof Date ? chunk.at.getTime() : chunk._id instanceof ObjectId ? chunk._id.getTimestamp().getTime() : 0;
        const seen = newest.get(key);
        if (!seen || at > seen.at) newest.set(key, { filesId: chunk.files_id, at });
      }
      let swept = 0;
      for (const { filesId, at } of newest.values()) {
        if (at >= cutoff.getTime()) continue;
        if (await files.findOne({ _id: filesId as ObjectIdInstance }, { projection: { _id: 1 } })) continue;
        await chunks.deleteMany({ files_id: filesId });
        swept += 1;
      }
      return swept;
    },

    async purgeOlderThan(cutoff) {
      const { files } = await collections();
      const expired = await files.find({ uploadDate: { $lt: cutoff } }, { projection: { _id: 1 } }).toArray();
      for (const file of expired) await this.remove(file._id.toHexString());
      return expired.length;
    },
  };
}
