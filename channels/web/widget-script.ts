/**
 * Serves the widget script: `/widget.js` answers with the current bundle itself (no
 * redirect, a short cache and an ETag), `/widget/<version>/widget.js` with the immutable one;
 * both compressed (brotli, else gzip) when the browser accepts it. The compressed copies are made
 * once per bundle.
 */
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Request, Response } from 'express';

/** The bundle as `routes.ts` has it (its code and content version). */
interface WidgetBundle {
  code: string;
  version: string;
}

interface Encoded {
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
}

const encodedBundles = new WeakMap<WidgetBundle, Encoded>();

function encodedOf(bundle: WidgetBundle): Encoded {
  let encoded = encodedBundles.get(bundle);
  if (!encoded) {
    const identity = Buffer.from(bundle.code);
    encoded = {
      identity,
      gzip: gzipSync(identity, { level: 9 }),
      br: brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }),
    };
    encodedBundles.set(bundle, encoded);
  }
  return encoded;
}

/** Sends the bundle in the best encoding the request accepts, with `cacheControl`. */
export function sendWidgetScript(request: Request, response: Response, bundle: WidgetBundle, cacheControl: string): void {
  const encoded = encodedOf(bundle);
  const etag = `"${bundle.version}"`;
  response.set({
    'Cache-Control': cacheControl,
    'Access-Control-Allow-Origin': '*',
    'Content-Type': 'application/javascript; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    ETag: etag,
    Vary: 'Accept-Encoding',
  });
  if (request.get('if-none-match') === etag) {
    response.status(304).end();
    return;
  }
  const accepted = request.acceptsEncodings('br', 'gzip', 'identity');
  const encoding = accepted === 'br' || accepted === 'gzip' ? accepted : undefined;
  const body = encoding ? encoded[encoding] : encoded.identity;
  if (encoding) response.set('Content-Encoding', encoding);
  response.set('Content-Length', String(body.length));
  response.status(200).end(request.method === 'HEAD' ? undefined : body);
}
