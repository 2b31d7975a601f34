/**
 * The Server-Sent Events stream (a few per visitor): the conversation's events after the cursor
 * the browser names, then each as it lands; one heartbeat timer for the process's streams, all
 * ended on shutdown.
 */
import type { Request, Response, Router } from 'express';
import { isStreamId } from './event-log.js';
import { conversationKeyOf, type RouteKit } from './route-kit.js';
import { createStreamSlots, type StreamSlot } from './stream-slots.js';

const HEARTBEAT_MS = 15_000;

/**
 * What Express keeps on a request for its routing (each router's `next` with the state it saved,
 * the parsed URL, params), let go once an event stream is open: nothing reads it again, and it
 * would otherwise stay for the stream's whole life (~2 KiB a stream).
 */
function releaseRouting(request: Request, response: Response): void {
  const routing = request as unknown as Record<string, unknown>;
  for (const key of ['next', '_parsedUrl', 'params', 'route']) routing[key] = undefined;
  (response as unknown as Record<string, unknown>).locals = undefined;
}

/**
 * The process's open event streams: one timer beats them all (a comment line, and the stream's
 * slot marked alive) instead of a timer and closure per stream, and shutdown ends them all.
 */
function createOpenStreams(heartbeatMs: number, onSlotError: (error: unknown) => void) {
  const open = new Map<Response, StreamSlot>();
  let timer: ReturnType<typeof setInterval> | undefined;
  const beat = () => {
    for (const [response, slot] of open) {
      response.write(': heartbeat\n\n');
      slot.refresh().catch(onSlotError);
    }
  };
  return {
    add(response: Response, slot: StreamSlot): void {
      open.set(response, slot);
      timer ??= setInterval(beat, heartbeatMs);
    },
    delete(response: Response): void {
      open.delete(response);
      if (open.size > 0) return;
      clearInterval(timer);
      timer = undefined;
    },
    endAll(): void {
      for (const response of open.keys()) response.end();
    },
  };
}

export function addEventStreamRoute(router: Router, kit: RouteKit): void {
  const { settings, options, logger, metrics, refuse, authenticate, withinRequestLimits } = kit;
  const { events } = settings;
  const streamSlots = createStreamSlots(options.redis, { perVisitor: options.limits.streamsPerVisitor, heartbeatMs: HEARTBEAT_MS });
  const openStreams = createOpenStreams(HEARTBEAT_MS, (error) => logger.warn('widget-stream-slot-failed', { error }));
  options.shutdown.addEventListener('abort', () => openStreams.endAll(), { once: true });

  router.get('/api/widget/events', async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    if (!(await withinRequestLimits(request, response, visitor.claims.visitorId))) return;
    const slot = await streamSlots.take(`${visitor.claims.siteKey}:${visitor.claims.visitorId}`);
    if (!slot) {
      refuse(response, 429, `at most ${options.limits.streamsPerVisitor} open event streams per visitor`, 'streams', {
        maxStreams: options.limits.streamsPerVisitor,
      });
      return;
    }
    const conversationKey = conversationKeyOf(visitor.claims);
    const requested = request.get('last-event-id') ?? (typeof request.query.lastEventId === 'string' ? request.query.lastEventId : undefined);
    let cursor: string;
    try {
      cursor = isStreamId(requested) ? requested : await events.tail(conversationKey);
    } catch (error) {
      await slot.release().catch(() => undefined);
      throw error;
    }

    response.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    response.flushHeaders();
    response.write('retry: 2000\n\n');
    metrics.increment('widget_streams_opened_total');
    releaseRouting(request, response);

    let draining = Promise.resolve();
    const pull = () => {
      draining = draining.then(async () => {
        try {
          for (;;) {
            const batch = await events.after(conversationKey, cursor);
            const last = batch.at(-1);
            if (!last) return;
            for (const event of batch) response.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`);
            cursor = last.id;
          }
        } catch (error) {
          logger.warn('widget-stream-read-failed', { error });
        }
      });
    };
    const unsubscribe = events.listen(conversationKey, pull);
    pull();
    if (options.shutdown.aborted) response.end();
    else openStreams.add(response, slot);
    request.on('close', () => {
      openStreams.delete(response);
      unsubscribe();
      slot.release().catch((error: unknown) => logger.warn('widget-stream-slot-failed', { error }));
    });
  });
}
