/**
 * The widget's lazily loaded parts. `widget.js` carries what a first paint needs (the launcher,
 * the session, English); the chat itself (panel, message list, attachments, event stream, rich
 * text and its stylesheet) is a second script, the ES module `/widget/part/chat-<hash>.js` from
 * the service's own origin, imported while the launcher is already drawn. A dynamic `import()`
 * is no Trusted Types sink (a page under `trusted-types 'none'` runs it), needs no inline script
 * or eval, and carries the embedding script's nonce; the page's `script-src` must allow the
 * service's origin, as it does for widget.js. The file name carries the part's content hash (set
 * by scripts/build-widget.ts), so `widget.js`'s own version covers it.
 */

let attempts = 0;

/** Imports `file` from `origin` and resolves with its `part` export. */
export async function loadPart<Value>(serviceOrigin: string, file: string): Promise<Value> {
  // A failed import stays failed for its URL: a retry asks under another query.
  attempts += 1;
  const url = `${serviceOrigin}/widget/part/${file}${attempts > 1 ? `?retry=${attempts}` : ''}`;
  const loaded = (await import(url)) as { part: Value };
  return loaded.part;
}
