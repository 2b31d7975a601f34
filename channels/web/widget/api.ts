/**
 * The widget's client for the service's `/api/widget/*` endpoints. Every response body is
 * checked against the shape the widget relies on before use (hand-written guards rather than
 * zod, which would triple the bundle). Expected failures come back as results, never throws:
 * `network` when no answer arrived (offline, blocked), `status` for an HTTP error answer.
 */
import { parseChoices, type WidgetChoice } from './choices.js';
import { reportToSiteDeveloper } from './developer-console.js';
import { readSignedInUser } from './signed-in-user.js';
import { catalogueFrom, ENGLISH, type Catalogue } from './strings.js';

export interface SiteSettings {
  name: string;
  greeting: string;
  accentColor: string | undefined;
  language: string | undefined;
  maxMessageChars: number | undefined;
  /** The largest attachment the service takes, in bytes. */
  maxUploadBytes: number | undefined;
}

export interface Session {
  token: string;
  visitorId: string;
  conversationId: string;
  /** When the token stops working (ms since the epoch), if the service says. */
  expiresAt: number | undefined;
  site: SiteSettings;
}

/** Who wrote a message, or holds the conversation: the assistant, or a named teammate of a team. */
export type Sender = { kind: 'assistant' } | { kind: 'teammate'; name: string; team: string };

export interface HistoryMessage {
  id: string;
  role: 'visitor' | 'assistant';
  text: string;
  /** Who wrote an assistant-side message (the assistant when the service does not say). */
  sender: Sender;
  /** When it was written (ms since the epoch), if the service says. */
  at: number | undefined;
  /** A visitor's files, each with a link signed for it (absolute). */
  attachments: HistoryAttachment[];
  /** On the reply that says the service gave up: the visitor's message it answers (to try again). */
  retryOf: string | undefined;
  /** A question's answers; tappable only while `choicesOpen` (the conversation's open question, until `choicesExpireAt`). */
  choices: WidgetChoice[] | undefined;
  choicesOpen: boolean;
  choicesExpireAt: number | undefined;
  /** The answer the visitor tapped. */
  chosen: string | undefined;
}

export interface HistoryAttachment {
  id: string;
  kind: 'image' | 'document';
  name: string;
  url: string;
}

export interface History {
  messages: HistoryMessage[];
  /** Who the visitor is talking to now. */
  holder: Sender;
  /** The event stream position the history is current to: stream from here to miss nothing. */
  lastEventId: string | undefined;
}

export interface AcceptedMessage {
  messageId: string;
  duplicate: boolean;
}

export interface NewChat {
  token: string;
  conversationId: string;
  expiresAt: number | undefined;
}

export type ApiFailure =
  | { ok: false; kind: 'network' }
  | {
      ok: false;
      kind: 'status';
      status: number;
      error: string;
      /** 413: the longest message the site accepts. */
      maxChars?: number;
      /** 429: how long to wait before sending again. */
      retryAfterSeconds?: number;
    };

export interface OutgoingMessage {
  clientMessageId: string;
  text: string;
  /** Where the visitor is, so the assistant can ground its answer (no query string or fragment). */
  page?: { url: string; title: string };
  /** Ids of files uploaded to this conversation (`uploadUrl`). */
  attachments?: string[];
  /** The id of the choice the visitor tapped (`text` is its label). */
  choice?: string;
  /** The language the widget speaks (the service writes its own words, e.g. a confirmation, in it). */
  language?: string;
}

export type ApiResult<Value> = { ok: true; value: Value } | ApiFailure;

export interface WidgetApi {
  startSession(input: { visitorId?: string; token?: string }): Promise<ApiResult<Session>>;
  history(token: string): Promise<ApiResult<History>>;
  sendMessage(token: string, message: OutgoingMessage): Promise<ApiResult<AcceptedMessage>>;
  newChat(token: string): Promise<ApiResult<NewChat>>;
  /** The visitor is typing, or stopped (the service holds its reply while they type). */
  reportTyping(token: string, typing: boolean): Promise<ApiResult<true>>;
  eventsUrl(token: string, lastEventId: string | undefined): string;
  /** Where one attachment is uploaded (see attachment-upload.ts); `name` is only its display name. */
  uploadUrl(name: string): string;
  /** The widget's words in `language` (English for English, or when they can't be had). */
  catalogue(language: string): Promise<Catalogue>;
  /**
   * The site's data for the conversation (`setData`): sent with the visitor's next message taken
   * (at once in a conversation they wrote in). `undefined` forgets it here only.
   */
  setData(data: Record<string, unknown> | undefined): void;
}

const REQUEST_TIMEOUT_MS = 20_000;

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const positiveNumber = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined);
// Milliseconds since the epoch, or an ISO date.
export const instant = (value: unknown): number | undefined => positiveNumber(typeof value === 'string' ? Date.parse(value) : value);
const MAX_NAME_LENGTH = 80;

/** A sender as the service describes it; anything unrecognised is the assistant (older services send none). */
export function parseSender(value: unknown): Sender {
  if (!isRecord(value) || value.kind !== 'teammate') return { kind: 'assistant' };
  const name = text(value.name)?.trim().slice(0, MAX_NAME_LENGTH);
  const team = text(value.team)?.trim().slice(0, MAX_NAME_LENGTH) ?? '';
  return name ? { kind: 'teammate', name, team } : { kind: 'assistant' };
}

/** A site's settings as the service sends them (or as the last session left them in storage). */
export function parseSite(site: Json): SiteSettings {
  return {
    name: text(site.name) ?? '',
    greeting: text(site.greeting) ?? '',
    accentColor: text(site.accentColor),
    language: text(site.language),
    maxMessageChars: positiveNumber(site.maxMessageChars),
    maxUploadBytes: positiveNumber(site.maxUploadBytes),
  };
}

function parseSession(body: Json): Session | undefined {
  const site = body.site;
  const token = text(body.token);
  const visitorId = text(body.visitorId);
  const conversationId = text(body.conversationId);
  if (!token || !visitorId || !conversationId || !isRecord(site)) return undefined;
  return { token, visitorId, conversationId, expiresAt: instant(body.expiresAt), site: parseSite(site) };
}

function parseHistory(body: Json, baseUrl: string): History | undefined {
  if (!Array.isArray(body.messages)) return undefined;
  const messages: HistoryMessage[] = [];
  for (const entry of body.messages) {
    if (!isRecord(entry)) return undefined;
    const id = text(entry.id);
    const content = text(entry.text);
    if (!id || content === undefined || (entry.role !== 'visitor' && entry.role !== 'assistant')) return undefined;
    const attachments = (Array.isArray(entry.attachments) ? entry.attachments : []).flatMap((item): HistoryAttachment[] => {
      const url = isRecord(item) ? text(item.url) : undefined;
      if (!isRecord(item) || !url || !url.startsWith('/')) return [];
      return [{ id: text(item.id) ?? '', kind: item.kind === 'image' ? 'image' : 'document', name: text(item.name) ?? 'file', url: `${baseUrl}${url}` }];
    });
    messages.push({
      id,
      role: entry.role,
      text: content,
      sender: parseSender(entry.sender),
      at: instant(entry.at),
      attachments,
      retryOf: entry.failed === true ? text(entry.replyTo) : undefined,
      choices: parseChoices(entry.choices),
      choicesOpen: entry.choicesOpen === true,
      choicesExpireAt: instant(entry.choicesExpireAt),
      chosen: text(entry.chosen),
    });
  }
  return { messages, holder: parseSender(isRecord(body.state) ? body.state.holder : undefined), lastEventId: text(body.lastEventId) };
}

function parseAccepted(body: Json): AcceptedMessage | undefined {
  const messageId = text(body.messageId);
  return messageId ? { messageId, duplicate: body.duplicate === true } : undefined;
}

function parseNewChat(body: Json): NewChat | undefined {
  const token = text(body.token);
  const conversationId = text(body.conversationId);
  return token && conversationId ? { token, conversationId, expiresAt: instant(body.expiresAt) } : undefined;
}

export function createWidgetApi(baseUrl: string, siteKey: string): WidgetApi {
  async function call<Value>(
    path: string,
    init: { method: 'GET' | 'POST'; token?: string; body?: object },
    parse: (body: Json) => Value | undefined,
  ): Promise<ApiResult<Value>> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (init.token) headers.Authorization = `Bearer ${init.token}`;
    if (init.body) headers['Content-Type'] = 'application/json';
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
    let response: Response;
    let body: unknown;
    try {
      response = await fetch(`${baseUrl}${path}`, {
        method: init.method,
        headers,
        body: init.body ? JSON.stringify(init.body) : undefined,
        credentials: 'omit',
        cache: 'no-store',
        signal: controller.signal,
      });
      body = await response.json().catch(() => undefined);
    } catch {
      return { ok: false, kind: 'network' };
    } finally {
      clearTimeout(timer);
    }
    const record = isRecord(body) ? body : {};
    if (!response.ok) {
      const retryAfterHeader = Number(response.headers.get('Retry-After'));
      return {
        ok: false,
        kind: 'status',
        status: response.status,
        error: text(record.error) ?? `HTTP ${response.status}`,
        maxChars: positiveNumber(record.maxChars),
        retryAfterSeconds: positiveNumber(record.retryAfterSeconds) ?? positiveNumber(retryAfterHeader),
      };
    }
    const value = parse(record);
    if (value === undefined) return { ok: false, kind: 'status', status: response.status, error: 'unexpected response from the chat service' };
    return { ok: true, value };
  }

  // The site's data goes with the conversation once the visitor writes in it (a page view alone
  // stores nothing): after a message the service took, once per token (again after a renewal or
  // a new chat), and at once when it changes in a conversation already written in.
  let siteData: Record<string, unknown> | undefined;
  // The last data the service took: a refused `setData` changes nothing, here or in later conversations.
  let accepted: Record<string, unknown> | undefined;
  let writtenWith: string | undefined;
  let sentWith: string | undefined;
  const sendData = (token: string): void => {
    const data = siteData;
    if (!data || sentWith === token) return;
    sentWith = token;
    void call('/api/widget/data', { method: 'POST', token, body: { data } }, () => true).then((result) => {
      if (result.ok) accepted = data;
      else if (result.kind === 'status' && result.status === 400) {
        // The site's own mistake (a key or value out of bounds): its developer reads why.
        reportToSiteDeveloper(`setData was refused: ${result.error}`);
        if (siteData === data) siteData = accepted;
      }
    });
  };

  return {
    setData(data) {
      siteData = data;
      sentWith = undefined;
      if (!data) writtenWith = accepted = undefined;
      else if (writtenWith) sendData(writtenWith);
    },
    // The service chooses the visitor id (a stored one is not sent); the token proves a returning visitor.
    startSession: (input) => {
      const user = readSignedInUser(siteKey);
      return call(
        '/api/widget/session',
        { method: 'POST', body: { siteKey, ...(input.token ? { token: input.token } : {}), ...(user ? { user } : {}) } },
        parseSession,
      );
    },
    history: (token) => call('/api/widget/history', { method: 'GET', token }, (body) => parseHistory(body, baseUrl)),
    sendMessage: (token, message) =>
      call('/api/widget/messages', { method: 'POST', token, body: message }, parseAccepted).then((result) => {
        if (result.ok) sendData((writtenWith = token));
        return result;
      }),
    newChat(token) {
      writtenWith = undefined;
      return call('/api/widget/new-chat', { method: 'POST', token }, parseNewChat);
    },
    reportTyping: (token, typing) => call('/api/widget/typing', { method: 'POST', token, body: { typing } }, () => true as const),
    eventsUrl(token, lastEventId) {
      const query = new URLSearchParams({ token });
      if (lastEventId) query.set('lastEventId', lastEventId);
      return `${baseUrl}/api/widget/events?${query.toString()}`;
    },
    catalogue: async (language) => {
      if (language === 'en') return ENGLISH;
      const result = await call(`/widget/i18n/${language}.json`, { method: 'GET' }, catalogueFrom);
      return result.ok ? result.value : ENGLISH;
    },
    uploadUrl: (name) => `${baseUrl}/api/widget/uploads?${new URLSearchParams({ name: name.slice(0, 200) }).toString()}`,
  };
}
