/**
 * A minimal Server-Sent Events reader for tests: connects with fetch, parses frames, and
 * collects events until a condition holds or the time runs out.
 */
export interface SseEvent {
  id: string | undefined;
  event: string;
  data: unknown;
}

export interface SseOptions {
  headers?: Record<string, string>;
  until: (events: SseEvent[]) => boolean;
  timeoutMs?: number;
  /** Called on every chunk the server sends; the first means the stream is live. */
  onOpen?: () => void;
}

/**
 * Connects and resolves once the stream is live (the server has taken its cursor), so what
 * the test does next is seen; `events` then resolves as `collectSse` does.
 */
export async function openSse(url: string, options: SseOptions): Promise<{ events: Promise<SseEvent[]> }> {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const events = collectSse(url, { ...options, onOpen: open });
  await Promise.race([opened, events]);
  return { events };
}

export async function collectSse(url: string, options: SseOptions): Promise<SseEvent[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs ?? 10_000);
  const events: SseEvent[] = [];
  try {
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...options.headers }, signal: abort.signal });
    if (!response.ok || !response.body) throw new Error(`SSE connect failed: ${response.status} ${await response.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      options.onOpen?.();
      buffer += decoder.decode(chunk, { stream: true });
      let boundary: number;
      while ((boundary = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        const fields = Object.fromEntries(
          frame
            .split('\n')
            .filter((line) => line && !line.startsWith(':'))
            .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart()]),
        );
        if (!fields.event) continue;
        events.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data ?? 'null') });
        if (options.until(events)) return events;
      }
    }
    return events;
  } catch (error) {
    if (abort.signal.aborted) throw new Error(`SSE: condition not met; got ${JSON.stringify(events.map((event) => event.event))}`, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}
