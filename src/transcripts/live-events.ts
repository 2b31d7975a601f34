/**
 * `GET /transcripts/:conversationId/events`: the live page's Server-Sent Events, authorised by
 * the signed link itself (expires + sig in the query, as EventSource sends no headers) and
 * ending when the link expires. It subscribes to the conversation first, then sends what is
 * stored (the page drops what it already shows), so nothing that lands in between is missed;
 * after that every message (the customer's, the assistant's, a teammate's) and hand-off change
 * arrives as the takeover service publishes it (a customer's media with a signed link each, as the
 * page shows them), and the stored transcript is read again now and
 * then for anything a lost publication (a subscriber reconnecting) missed. A stream never
 * outlives the link, the process's draining, or its client.
 */
import type { Request, Response } from 'express';
import type { Logger } from '../logger.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import { liveMessageOf, pageHandoff, pageMessage, type LiveMessage, type LiveTakeover, type LiveTeam } from './live-takeover.js';
import type { TranscriptLinks } from './transcript-link.js';
import { checkLink, plainPage, refusalText, setPrivateHeaders } from './transcript-http.js';
import { mediaPath } from './transcript-media.js';

const HEARTBEAT_MS = 15_000;
/** How often the stored transcript is read again, for anything a lost publication missed (one query per open page). */
const STORED_REREAD_MS = 15_000;
// setTimeout's longest delay; a link further out than this is re-checked when it fires.
const MAX_TIMER_MS = 2_147_483_647;

export interface LiveEventsOptions {
  links: TranscriptLinks;
  transcripts: Pick<TranscriptStore, 'conversationMessages'>;
  takeover: LiveTakeover;
  teams: Readonly<Record<string, LiveTeam | undefined>>;
  logger: Logger;
  shutdown: AbortSignal;
  now?: () => number;
  /** Overrides how often the stored transcript is read again (tests). */
  rereadMs?: number;
}

export function createLiveEventsHandler(options: LiveEventsOptions) {
  const { links, transcripts, takeover, teams, logger } = options;
  const now = options.now ?? Date.now;

  return async (request: Request<{ conversationId: string }>, response: Response): Promise<void> => {
    setPrivateHeaders(response);
    const conversationId = request.params.conversationId;
    const { check, link } = checkLink(links, conversationId, request.query);
    if (check !== 'ok' || !link) {
      logger.warn('transcript-link-rejected', { reason: check, stream: true });
      const [status, text] = refusalText[check === 'ok' ? 'invalid' : check];
      plainPage(response, status, text);
      return;
    }

    let open = true;
    const write = (event: string, data: unknown): void => {
      if (open) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    // Each message once per stream, whether it came published or read back; a message whose media
    // came later (a held message is published first as its caption, then prepared) once more with them.
    const sent = new Set<string>();
    const writeMessage = (message: LiveMessage): void => {
      const media = message.media?.length ? message.media : undefined;
      const key = media ? `${message.id}\nmedia` : message.id;
      if (sent.has(key)) return;
      sent.add(key);
      sent.add(message.id);
      if (!media) {
        write('message', message);
        return;
      }
      // Each stored file by the page's own signed link (nothing else opens it).
      write('message', {
        ...message,
        media: media.map((item) => ({
          ...item,
          ...(item.id !== undefined ? { url: mediaPath(conversationId, item.id, { expires: link.expires, sig: link.signature }) } : {}),
        })),
      });
    };
    let reading: Promise<void> | undefined;
    const readStored = (): Promise<void> =>
      (reading ??= transcripts
        .conversationMessages(conversationId)
        .then((stored) => {
          for (const record of stored) writeMessage(liveMessageOf(pageMessage(record)));
        })
        .catch((error: unknown) => logger.warn('transcript-stream-read-failed', { conversationId, error }))
        .finally(() => {
          reading = undefined;
        }));
    const sendState = async (): Promise<void> => {
      try {
        write('state', { handoff: pageHandoff(await takeover.handoffsOf(conversationId), teams) ?? null });
      } catch (error) {
        logger.warn('transcript-stream-state-failed', { conversationId, error });
      }
    };

    // Subscribed before anything is read: what lands meanwhile comes twice at worst, never not at all.
    let unsubscribe: (() => Promise<void>) | undefined;
    try {
      unsubscribe = await takeover.subscribe(conversationId, (event) => {
        if (event.type === 'message') writeMessage(event.message);
        else void sendState();
      });
    } catch (error) {
      logger.warn('transcript-stream-unavailable', { conversationId, error });
      plainPage(response, 503, 'Live updates are unavailable right now');
      return;
    }

    response.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    response.flushHeaders();
    response.write('retry: 3000\n\n');
    logger.info('transcript-stream-opened', { conversationId });

    const heartbeat = setInterval(() => response.write(': heartbeat\n\n'), HEARTBEAT_MS);
    const reread = setInterval(() => void readStored(), options.rereadMs ?? STORED_REREAD_MS);
    let expiry: NodeJS.Timeout | undefined;
    const end = (): void => {
      if (!open) return;
      open = false;
      response.end();
    };
    const scheduleExpiry = (): void => {
      const left = Number(link.expires) * 1000 - now();
      if (left <= 0) {
        write('expired', {});
        logger.info('transcript-stream-expired', { conversationId });
        end();
        return;
      }
      expiry = setTimeout(scheduleExpiry, Math.min(left, MAX_TIMER_MS));
    };
    scheduleExpiry();
    options.shutdown.addEventListener('abort', end, { once: true });
    request.on('close', () => {
      open = false;
      clearInterval(heartbeat);
      clearInterval(reread);
      clearTimeout(expiry);
      options.shutdown.removeEventListener('abort', end);
      void unsubscribe?.().catch((error: unknown) => logger.warn('transcript-stream-unsubscribe-failed', { error }));
    });

    await readStored();
    await sendState();
  };
}
