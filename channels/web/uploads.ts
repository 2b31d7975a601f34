/**
 * The widget's uploads: `POST /api/widget/uploads` takes one file as the raw request body
 * (its display name in `?name=`), for the visitor behind the token on an origin their site
 * allows, rate limited per visitor and per IP. The type is decided by the file's first bytes
 * (JPEG, PNG, WebP, GIF or PDF) — never by its name or the declared Content-Type — and the
 * size by counting what arrives against `MEDIA_MAX_BYTES` (a declared Content-Length over it is
 * refused before a byte is read). The body streams straight into the media store (only the
 * first few bytes are held, to check the type) and the answer is the stored media's id, which
 * the visitor's next message names in `attachments`. `resolveAttachments` lets that message
 * name only media uploaded into its own conversation. An upload is reserved in the pending
 * uploads (`upload-claims.ts`) before its first byte is stored: a visitor's uploads no message
 * named yet are capped in count (429) and bytes (413), one message claims them, and the sweep
 * deletes what no message named within UPLOAD_UNCLAIMED_TTL_MINUTES (also the chunks of an upload
 * cut off midway). Every refusal is a 4xx with a reason and a log line; this module never
 * buffers a whole file.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { RedisClient } from '../../src/redis.js';
import { z } from 'zod';
import type { InboundMedia } from '../../src/contracts/index.js';
import type { Logger } from '../../src/logger.js';
import { checkContent, MediaRejectedError, SNIFF_BYTES, type MediaKind } from '../../src/media/content-check.js';
import { newMediaId, type MediaStore } from '../../src/media/media-store.js';
import type { UploadClaims } from '../../src/media/upload-claims.js';
import type { Metrics } from '../../src/metrics.js';
import { checkRate } from './rate-limit.js';

/** The kinds a visitor may attach (no audio from the widget), each named by a type of that kind. */
const WIDGET_KINDS: readonly { kind: MediaKind; declared: string }[] = [
  { kind: 'image', declared: 'image/png' },
  { kind: 'document', declared: 'application/pdf' },
];

/**
 * The type the first bytes show (JPEG, PNG, WebP, GIF or PDF, by the media store's allowlist),
 * or undefined for anything else (text, HTML, audio, an executable, too few bytes).
 */
function sniffUpload(head: Uint8Array): { contentType: string; kind: MediaKind } | undefined {
  for (const { declared } of WIDGET_KINDS) {
    try {
      return checkContent(declared, head);
    } catch (error) {
      if (!(error instanceof MediaRejectedError)) throw error;
    }
  }
  return undefined;
}

export interface UploadHandlerOptions {
  store: Pick<MediaStore, 'put'>;
  /** MEDIA_MAX_BYTES: the largest file taken. */
  maxBytes: number;
  /** Uploads per minute per visitor and per IP (429 beyond). */
  visitorPerMinute: number;
  ipPerMinute: number;
  /** A visitor's uploads no message named yet: at most this many (429 beyond) and bytes (413 beyond). */
  pending: { maxCount: number; maxBytes: number };
  claims: Pick<UploadClaims, 'reserve' | 'stored' | 'release'>;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
  /** The visitor behind the request's token on an allowed origin (answers 401/403 itself when not). */
  authenticate(request: Request, response: Response): { conversationId: string; visitorId: string; owner: string } | undefined;
  /** Answers a refusal: status, the error the widget shows, a reason for logs and metrics. */
  refuse(response: Response, status: number, error: string, reason: string, fields?: Record<string, unknown>): void;
  /** A signed link to a stored file (relative to the service), answered with it: a sent PDF is a link at once. */
  linkFor?(id: string): string;
}

const UploadQuerySchema = z.object({
  // A display name only (the PDF's name in the transcript and its download); never used for the type.
  name: z
    .string()
    .max(200)
    .transform((name) => name.replace(/[\p{Cc}\\/"]/gu, '').trim() || undefined)
    .optional(),
});

const UNSUPPORTED = 'this kind of file is not supported: send a JPEG, PNG, WebP or GIF image, or a PDF';

/** Reads chunks until the type check can decide (or the body ended); the chunks are kept to be stored. */
async function readHead(chunks: AsyncIterator<Buffer>): Promise<{ head: Buffer[]; length: number; ended: boolean }> {
  const head: Buffer[] = [];
  let length = 0;
  while (length < SNIFF_BYTES) {
    const next = await chunks.next();
    if (next.done) return { head, length, ended: true };
    head.push(next.value);
    length += next.value.length;
  }
  return { head, length, ended: false };
}

/** What the handler's steps share: its options and the two size refusals. */
interface UploadContext extends UploadHandlerOptions {
  tooLarge(response: Response): void;
  pendingTooLarge(response: Response): void;
}

type StoredUpload = Awaited<ReturnType<MediaStore['put']>>;
type UploadVisitor = { conversationId: string; visitorId: string; owner: string };

export function createUploadHandler(options: UploadHandlerOptions): RequestHandler {
  const { maxBytes, refuse } = options;
  const context: UploadContext = {
    ...options,
    tooLarge: (response) => refuse(response, 413, `the file is larger than ${maxBytes} bytes`, 'upload_too_large', { maxBytes }),
    pendingTooLarge: (response) =>
      refuse(
        response,
        413,
        `uploads waiting for a message may hold at most ${options.pending.maxBytes} bytes: send a message with them first`,
        'pending_uploads_bytes',
        { maxPendingBytes: options.pending.maxBytes },
      ),
  };

  return async (request, response) => {
    const visitor = options.authenticate(request, response);
    if (!visitor) return;
    if (!(await withinLimits(context, request, response, visitor.visitorId))) return;
    const query = UploadQuerySchema.safeParse(request.query);
    const fileName = query.success ? query.data.name : undefined;
    const declared = Number(request.get('content-length'));
    // Refused before a byte is read; what the client still sends is discarded.
    if (Number.isFinite(declared) && declared > maxBytes) {
      request.resume();
      context.tooLarge(response);
      return;
    }

    const id = newMediaId();
    const cap = await reserve(context, request, response, visitor.owner, id, Number.isFinite(declared) && declared > 0 ? declared : maxBytes);
    if (cap === undefined) return;
    let stored: StoredUpload | undefined;
    try {
      stored = await receive(context, request, response, visitor, id, cap, fileName);
    } finally {
      const settled = stored ? options.claims.stored(visitor.owner, id, stored.size) : options.claims.release(visitor.owner, id);
      await settled.catch((error: unknown) => options.logger.warn('widget-upload-unsettled', { conversationId: visitor.conversationId, mediaId: id, error }));
    }
  };
}

/** The per-minute limits per visitor and per IP: false once it answered a 429. */
async function withinLimits(context: UploadContext, request: Request, response: Response, visitorId: string): Promise<boolean> {
  for (const [scope, subject, limit] of [
    ['visitor', visitorId, context.visitorPerMinute],
    ['ip', request.ip ?? 'unknown', context.ipPerMinute],
  ] as const) {
    const rate = await checkRate(context.redis, `${scope}-uploads`, subject, limit);
    if (!rate.allowed) {
      response.set('Retry-After', String(rate.retryAfterSeconds));
      context.refuse(response, 429, 'too many uploads, retry later', `rate_${scope}_uploads`, { retryAfterSeconds: rate.retryAfterSeconds });
      return false;
    }
  }
  return true;
}

/**
 * Reserves the upload among the visitor's pending ones: this upload's cap (MEDIA_MAX_BYTES, or
 * the visitor's pending bytes left if fewer), or undefined once it answered a refusal.
 */
async function reserve(context: UploadContext, request: Request, response: Response, owner: string, id: string, bytes: number): Promise<number | undefined> {
  const reserved = await context.claims.reserve(owner, id, bytes, context.pending);
  if (reserved.ok) return Math.min(context.maxBytes, reserved.grantedBytes);
  request.resume();
  if (reserved.reason === 'count') {
    context.refuse(
      response,
      429,
      `${reserved.count} uploads are waiting for a message (at most ${context.pending.maxCount}): send a message with them first`,
      'pending_uploads_count',
      { maxPendingUploads: context.pending.maxCount },
    );
  } else {
    context.pendingTooLarge(response);
  }
  return undefined;
}

/** Streams the body into the store under `id`; the stored media, or undefined once it answered a refusal. */
async function receive(
  context: UploadContext,
  request: Request,
  response: Response,
  visitor: UploadVisitor,
  id: string,
  cap: number,
  fileName: string | undefined,
): Promise<StoredUpload | undefined> {
  const { logger, refuse } = context;
  const declared = Number(request.get('content-length'));
  if (cap < context.maxBytes && Number.isFinite(declared) && declared > cap) {
    request.resume();
    context.pendingTooLarge(response);
    return undefined;
  }
  const chunks = request[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let first: Awaited<ReturnType<typeof readHead>>;
  try {
    first = await readHead(chunks);
  } catch (error) {
    logger.warn('widget-upload-aborted', { conversationId: visitor.conversationId, error });
    return undefined;
  }
  if (first.length === 0) {
    refuse(response, 400, 'the upload is empty', 'upload_empty');
    return undefined;
  }
  const type = sniffUpload(Buffer.concat(first.head));
  if (!type) {
    request.resume();
    refuse(response, 415, UNSUPPORTED, 'upload_type');
    return undefined;
  }

  async function* body(): AsyncGenerator<Buffer> {
    yield* first.head;
    if (first.ended) return;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  }
  try {
    // The store counts against the cap as it writes, and removes what it wrote when refusing.
    const stored = await context.store.put(body(), {
      id,
      contentType: type.contentType,
      conversationId: visitor.conversationId,
      filename: fileName,
      channel: 'web',
      maxBytes: cap,
    });
    answerStored(context, response, stored, fileName);
    return stored;
  } catch (error) {
    if (refuseRejected(context, request, response, error, cap)) return undefined;
    if (!request.complete) {
      logger.warn('widget-upload-aborted', { conversationId: visitor.conversationId, error });
      return undefined;
    }
    throw error;
  }
}

/** Counts and logs a stored upload and answers it with its id (and link, for a PDF shown at once). */
function answerStored(context: UploadContext, response: Response, stored: StoredUpload, fileName: string | undefined): void {
  context.metrics.increment('widget_uploads_total', { kind: stored.kind });
  context.logger.info('widget-upload-stored', {
    conversationId: stored.conversationId,
    mediaId: stored.id,
    contentType: stored.contentType,
    bytes: stored.size,
  });
  const url = context.linkFor?.(stored.id);
  response
    .status(201)
    .json({ id: stored.id, contentType: stored.contentType, size: stored.size, ...(fileName ? { name: fileName } : {}), ...(url ? { url } : {}) });
}

/** Answers the store's refusal of the body (too large, not a supported type): true when it did. */
function refuseRejected(context: UploadContext, request: Request, response: Response, error: unknown, cap: number): boolean {
  if (!(error instanceof MediaRejectedError)) return false;
  if (error.reason === 'too-large') {
    // The rest is discarded and the connection closed after the answer.
    request.resume();
    response.set('Connection', 'close');
    if (cap < context.maxBytes) context.pendingTooLarge(response);
    else context.tooLarge(response);
    return true;
  }
  if (error.reason === 'unsupported-type') {
    request.resume();
    context.refuse(response, 415, UNSUPPORTED, 'upload_type');
    return true;
  }
  return false;
}

/**
 * The media a widget message names, each checked to have been uploaded into `conversationId`:
 * an id that is unknown or belongs to another conversation is refused by name (the same answer
 * for both, so someone else's upload id reveals nothing).
 */
export async function resolveAttachments(
  store: Pick<MediaStore, 'info'>,
  conversationId: string,
  ids: readonly string[],
): Promise<{ ok: true; media: InboundMedia[] } | { ok: false; id: string }> {
  const found = await Promise.all([...new Set(ids)].map(async (id) => ({ id, info: await store.info(id) })));
  const media: InboundMedia[] = [];
  for (const { id, info } of found) {
    if (!info || info.conversationId !== conversationId) return { ok: false, id };
    media.push({ id, contentType: info.contentType, size: info.size, ...(info.filename ? { filename: info.filename } : {}) });
  }
  return { ok: true, media };
}
