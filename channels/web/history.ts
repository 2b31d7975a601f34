/**
 * The widget's history as a reload shows it: each message with its time, and a
 * visitor's message with its own text and its attachments (each a link signed for that one file,
 * served by `GET /api/widget/media/<id>`), read from the details the event log keeps beside the
 * conversation's recent messages (which hold "(1 photo) caption" for the model).
 */
import type { Request, Response } from 'express';
import type { Logger } from '../../src/logger.js';
import type { MediaStore } from '../../src/media/media-store.js';
import { APOLOGY_PART, type RecentMessage } from '../../src/store/transcript-store.js';
import type { MessageDetails, WidgetSender } from './event-log.js';
import { clientMessageIdOf } from './message-ids.js';
import type { VisitorTokens } from './visitor-token.js';

/** How long a history's media link works: whole hours, so history reads within an hour give the same links (cached once). */
const MEDIA_LINK_HOURS = 2;
const HOUR_MS = 60 * 60 * 1000;
const MEDIA_ID = /^[A-Za-z0-9_-]{1,64}$/;
// What the media summary puts in front of a caption ("(2 photos, 1 PDF) "), for a message stored before its details were kept.
const MEDIA_SUMMARY = /^\((?:\d+ (?:photos?|PDFs?|voice notes?|files?)(?:, )?)+\)(?: |$)/;

type MediaLinks = Pick<VisitorTokens, 'signMedia' | 'verifyMedia'>;

/** The path of a signed link to media `id` (relative to the service). */
export function mediaLink(tokens: MediaLinks, id: string, now = Date.now()): string {
  const expires = (Math.floor(now / HOUR_MS) + MEDIA_LINK_HOURS) * HOUR_MS;
  return `/api/widget/media/${encodeURIComponent(id)}?expires=${expires}&sig=${tokens.signMedia(id, expires)}`;
}

/** A recent message as the widget shows it: a teammate's with their name (and without the "[Ana, Support] " the model reads). */
export function historyMessage(message: RecentMessage, sender: WidgetSender | undefined, details: MessageDetails | undefined, tokens: MediaLinks) {
  const at = details?.at !== undefined ? { at: details.at } : {};
  if (message.direction === 'inbound') {
    const attachments = details?.attachments?.map((attachment) => ({ ...attachment, url: mediaLink(tokens, attachment.id) }));
    return {
      id: clientMessageIdOf(message.id),
      role: 'visitor',
      text: details?.text ?? message.text.replace(MEDIA_SUMMARY, ''),
      ...at,
      ...(attachments?.length ? { attachments } : {}),
    };
  }
  // The apology for a message the service gave up on: the widget offers to try it again.
  const failed = message.id.endsWith(`#${APOLOGY_PART}`) ? { failed: true, replyTo: clientMessageIdOf(message.id.slice(0, message.id.lastIndexOf('#'))) } : {};
  if (sender?.kind !== 'teammate') return { id: message.id, role: 'assistant', text: message.text, ...at, ...failed };
  const signature = `[${sender.name}, ${sender.team}] `;
  return { id: message.id, role: 'assistant', text: message.text.startsWith(signature) ? message.text.slice(signature.length) : message.text, sender, ...at };
}

type Shown = ReturnType<typeof historyMessage>;

/**
 * The history with each question's answers, as the widget draws them under the message: the
 * conversation's open question (the newest message with answers, nothing from the visitor
 * after it, not yet expired) with `choicesOpen`, the rest disabled; an answered one names the
 * choice the visitor tapped (`chosen`). A visitor's message still waiting for its turn (only its
 * details are kept yet) answers it too.
 */
export function withQuestions(messages: readonly Shown[], details: ReadonlyMap<string, MessageDetails>, now = Date.now()) {
  const lastQuestion = messages.findLastIndex((message) => message.role === 'assistant' && details.get(message.id)?.choices?.length);
  return messages.map((message, index) => {
    const question = message.role === 'assistant' ? details.get(message.id) : undefined;
    if (!question?.choices?.length) return message;
    const answer = messages.slice(index + 1).find((next) => next.role === 'visitor');
    const chosen = answer && details.get(answer.id)?.choice;
    const waiting = [...details].some(([id, entry]) => !id.startsWith('out:') && entry.at > question.at);
    const open = index === lastQuestion && !answer && !waiting && (question.choicesExpireAt ?? Infinity) > now;
    return {
      ...message,
      choices: question.choices,
      ...(open ? { choicesOpen: true, ...(question.choicesExpireAt !== undefined ? { choicesExpireAt: question.choicesExpireAt } : {}) } : {}),
      ...(chosen && question.choices.some((choice) => choice.id === chosen) ? { chosen } : {}),
    };
  });
}

/** The id the history shows for a recent message (the visitor's own id for theirs). */
export function historyIdOf(message: RecentMessage): string {
  return message.direction === 'inbound' ? clientMessageIdOf(message.id) : message.id;
}

/**
 * Details to forget, keeping them bounded like the history: those of messages it no longer
 * shows, older than the oldest it does (a visitor's message still waiting for its turn is newer).
 */
export function staleDetails(details: ReadonlyMap<string, MessageDetails>, shown: readonly RecentMessage[]): string[] {
  const keep = new Set(shown.map(historyIdOf));
  const times = [...details].filter(([id]) => keep.has(id)).map(([, entry]) => entry.at);
  if (times.length === 0) return [];
  const oldest = Math.min(...times);
  return [...details].filter(([id, entry]) => !keep.has(id) && entry.at < oldest).map(([id]) => id);
}

/**
 * `GET /api/widget/media/:id?expires&sig`: one file a history link was signed for, readable by
 * the widget on any site's page (it fetches thumbnails; a PDF opens as a download).
 */
export function createMediaHandler(options: {
  tokens: MediaLinks;
  store: Pick<MediaStore, 'open'>;
  logger: Logger;
  refuse(response: Response, status: number, error: string, reason: string): void;
}) {
  return async (request: Request, response: Response): Promise<void> => {
    const id = String(request.params.id);
    const expires = Number(request.query.expires);
    const sig = typeof request.query.sig === 'string' ? request.query.sig : '';
    response.set({
      'Access-Control-Allow-Origin': '*',
      'Cross-Origin-Resource-Policy': 'cross-origin',
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': "default-src 'none'; sandbox",
      'Referrer-Policy': 'no-referrer',
    });
    if (!MEDIA_ID.test(id) || !Number.isSafeInteger(expires) || !options.tokens.verifyMedia(id, expires, sig)) {
      options.refuse(response, 403, 'this link is not valid or has expired', 'media_link');
      return;
    }
    const opened = await options.store.open(id);
    if (!opened) {
      options.refuse(response, 404, 'this file is no longer available', 'media_missing');
      return;
    }
    const { info, stream } = opened;
    const name = (info.filename ?? 'file').replace(/[^\x20-\x7e]|["\\]/g, '_');
    response.status(200).set({
      'Content-Type': info.contentType,
      'Content-Length': String(info.size),
      'Content-Disposition': `${info.kind === 'image' ? 'inline' : 'attachment'}; filename="${name}"`,
      'Cache-Control': `private, max-age=${Math.max(0, Math.floor((expires - Date.now()) / 1000))}`,
    });
    stream.on('error', (error) => {
      options.logger.warn('widget-media-read-failed', { mediaId: id, error });
      if (response.headersSent) response.destroy();
      else options.refuse(response, 503, 'this file could not be read, try again', 'media_read');
    });
    stream.pipe(response);
  };
}
