/**
 * The widget's lazily loaded parts. `widget.js` carries what a first paint needs (the launcher,
 * the session, English); the chat itself (panel, message list, attachments, event stream, rich
 * text and its stylesheet) is a second script, `/widget/part/chat-<hash>.js`, from the service's
 * own origin, loaded while the launcher is already drawn (carrying the embedding script's nonce,
 * so a page whose `script-src` trusts the widget's origin or nonce runs it; no eval, nothing inline).
 * A part registers itself under a registry symbol on `window`; its file name carries its content
 * hash (set by scripts/build-widget.ts), so `widget.js`'s own version covers it.
 */

const REGISTRY = Symbol.for('assistant-chat-widget.parts');

type WindowWithParts = Window & { [REGISTRY]?: Record<string, unknown> };

const registry = (): Record<string, unknown> => ((window as WindowWithParts)[REGISTRY] ??= {});

/** Called by a part's entry point when it runs. */
export function registerPart(name: string, value: unknown): void {
  registry()[name] = value;
}

/** Loads `file` from `origin` (once per page) and resolves with what it registered as `name`. */
export function loadPart<Value>(origin: string, file: string, name: string, nonce: string | undefined): Promise<Value> {
  const known = registry()[name];
  if (known) return Promise.resolve(known as Value);
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = `${origin}/widget/part/${file}`;
    script.async = true;
    if (nonce) script.nonce = nonce;
    script.onload = script.onerror = () => {
      script.remove();
      const value = registry()[name];
      if (value) resolve(value as Value);
      else reject(new Error(`widget part ${file} did not load`));
    };
    document.head.append(script);
  });
}
