// Owns the fake Twilio REST API the tests point the real `twilio` library at: a node:http
// server, routed by path only (the service rewrites every Twilio host to one base URL), that
// checks basic auth, answers message creates (text, media or a Content template with its
// variables, validated as Twilio does), the Messages list (To/From filters, newest
// first) and WhatsApp typing indicators with Twilio's JSON shapes, records what it was sent,
// and injects failures, delays and held requests on demand. It also serves inbound media as
// Twilio does: a `MediaUrl` on the API host checks basic auth and redirects (307) to a second
// loopback "CDN" server, which serves the bytes and records whether credentials reached it.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeTwilioOptions {
  accountSid: string;
  authToken: string;
}

/** Twilio's legacy REST error body. */
export interface TwilioErrorBody {
  code: number;
  message: string;
  more_info: string;
  status: number;
  detail?: string;
}

/** The Message resource as Twilio's 2010-04-01 API returns it (snake_case, RFC 2822 dates). */
export interface TwilioMessageResource {
  account_sid: string;
  api_version: string;
  body: string;
  date_created: string;
  date_sent: string | null;
  date_updated: string;
  direction: 'outbound-api';
  error_code: number | null;
  error_message: string | null;
  from: string | null;
  messaging_service_sid: string | null;
  num_media: string;
  num_segments: string;
  price: string | null;
  price_unit: string;
  sid: string;
  status: 'queued' | 'accepted';
  subresource_uris: Record<string, string>;
  to: string;
  uri: string;
}

/** One message create that Twilio accepted (failed creates are only in `requests`). */
export interface RecordedMessage {
  sid: string;
  accountSid: string;
  to: string;
  from: string | null;
  body: string;
  contentSid: string | undefined;
  contentVariables: string | undefined;
  messagingServiceSid: string | undefined;
  statusCallback: string | undefined;
  mediaUrls: string[];
  /** Every form field sent, first value per name. */
  params: Record<string, string>;
  /** A message sent as a quick-reply or list Content: its answers, variables filled in (`body` is its filled body). */
  choices?: RenderedChoice[];
  /** A message sent as a list Content: the button that opens its list. */
  button?: string;
  headers: IncomingHttpHeaders;
  /** Date.now() when the request arrived. */
  receivedAt: number;
  /** process.hrtime.bigint() when the request arrived, for ordering and latency. */
  receivedAtHrtime: bigint;
  resource: TwilioMessageResource;
}

export interface RecordedTypingIndicator {
  channel: string;
  messageId: string;
  params: Record<string, string>;
  receivedAt: number;
  receivedAtHrtime: bigint;
}

/** Every request the fake received, whatever it answered. */
export interface RecordedTwilioRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  status: number;
  receivedAt: number;
}

/** How the fake's media host answers for one media (see `addMedia`). */
export interface FakeMediaOptions {
  body: Buffer;
  /** The MediaContentType the webhook declares and the media host answers with. */
  contentType: string;
  /** The media host answers this status instead of the bytes. */
  status?: number;
  /** The media host sends the headers and then nothing more (a download that never finishes). */
  stall?: boolean;
  /** Leave out Content-Length (chunked), so only counting while streaming can find the size. */
  chunked?: boolean;
}

/** One request the media host (the fake CDN) received. */
export interface RecordedMediaRequest {
  path: string;
  /** The Authorization header it got: Twilio's credentials must never reach the CDN. */
  authorization: string | undefined;
  /** Bytes written before the client went away or the body ended. */
  bytesSent: number;
}

/** A message create the fake is holding open (see `holdNext`). */
export interface HeldCreate {
  params: Record<string, string>;
  /** Answers the held request (to whoever still listens). */
  release(): void;
}

/** One Content resource the Content API created (quick replies and lists for choices). */
export interface RecordedContent {
  sid: string;
  friendlyName: string;
  types: Record<string, unknown>;
}

/** A Content message's answers as the customer's phone shows them: the title and the id a tap sends back. */
export interface RenderedChoice {
  title: string;
  id: string;
}

export interface FakeTwilio {
  /** http://127.0.0.1:<port>, no trailing slash. */
  baseUrl: string;
  /** Content resources created (`POST /v1/Content`). */
  contents: RecordedContent[];
  /** From now on, Content creates and sends of a created Content answer `status` (Content unavailable to this sender); `undefined` restores it. */
  failContent(status: number | undefined): void;
  accountSid: string;
  authToken: string;
  messages: RecordedMessage[];
  typingIndicators: RecordedTypingIndicator[];
  requests: RecordedTwilioRequest[];
  /** Requests the media host (the CDN the media URLs redirect to) received. */
  mediaRequests: RecordedMediaRequest[];
  /** Serves `options.body` at a new Twilio media URL (basic auth, then a redirect to the media host); returns the URL for `MediaUrl{i}`. */
  addMedia(options: FakeMediaOptions): string;
  /** The next `count` message creates answer `status` with Twilio's error JSON (`body` overrides fields, or replaces it when a string). */
  failNext(count: number, status: number, body?: Partial<TwilioErrorBody> | string): void;
  /** Until reset, every message create whose body satisfies `matches` answers `status`. */
  failMatching(matches: (body: string) => boolean, status: number): void;
  /** From now (or the end of the last window) for `milliseconds`, every Messages request (create or list, or only `only`) answers `status`. */
  failDuring(milliseconds: number, status: number, only?: 'create' | 'list'): void;
  /** The next message create (or next `count` of them) waits `milliseconds` before it is answered. */
  delayNext(milliseconds: number, count?: number): void;
  /**
   * Holds the next message create open until released; resolves when it arrives. With
   * `accepted` the message is recorded (Twilio has it) before the answer is held; without, it
   * is answered 500 on release and never recorded (it never reached Twilio). With `to`, only
   * a create to that address is held.
   */
  holdNext(options: { accepted: boolean; to?: string }): Promise<HeldCreate>;
  /** Resolves with the accepted messages once there are at least `count`; rejects after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs?: number): Promise<RecordedMessage[]>;
  /** Forgets everything recorded and every pending failure or delay. */
  reset(): void;
  close(): Promise<void>;
}

const messageBodyLimit = 1600;

// Codes and texts Twilio uses for these failures (https://www.twilio.com/docs/api/errors).
const defaultErrors: Record<number, { code: number; message: string }> = {
  400: { code: 21211, message: "Invalid 'To' Phone Number" },
  401: { code: 20003, message: 'Authenticate' },
  403: { code: 20403, message: 'Forbidden' },
  404: { code: 20404, message: 'The requested resource was not found' },
  429: { code: 20429, message: 'Too Many Requests' },
  500: { code: 20500, message: 'Internal Server Error' },
  503: { code: 20503, message: 'Service Unavailable' },
};

function twilioErrorBody(status: number, overrides: Partial<TwilioErrorBody> = {}): TwilioErrorBody {
  const known = defaultErrors[status] ?? { code: 20000 + status, message: `HTTP ${status}` };
  const code = overrides.code ?? known.code;
  return {
    code,
    message: overrides.message ?? known.message,
    more_info: overrides.more_info ?? `https://www.twilio.com/docs/errors/${code}`,
    status,
    ...(overrides.detail === undefined ? {} : { detail: overrides.detail }),
  };
}

/** Twilio formats dates as RFC 2822 with a numeric zone: "Thu, 24 Aug 2023 05:01:45 +0000". */
function twilioDate(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000');
}

/** 32 hex digits: a UUID's, drawn from node's cached entropy (`randomBytes` per id was a system call each, ~5% of the bench's CPU). */
function newSid(prefix: string): string {
  return prefix + randomUUID().replaceAll('-', '');
}

function firstValues(form: URLSearchParams): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of form) if (!(name in params)) params[name] = value;
  return params;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'twilio-request-id': newSid('RQ'),
  });
  response.end(text);
}

/** Twilio's ContentVariables: a JSON object whose keys are variable numbers and values strings. */
function contentVariablesValid(raw: string | undefined): boolean {
  if (raw === undefined) return true;
  try {
    const parsed: unknown = JSON.parse(raw);
    return (
      typeof parsed === 'object' &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      Object.entries(parsed).every(([key, value]) => /^\d{1,2}$/.test(key) && typeof value === 'string')
    );
  } catch {
    return false;
  }
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

export async function startFakeTwilio(options: FakeTwilioOptions): Promise<FakeTwilio> {
  const { accountSid, authToken } = options;
  const expectedAuthorization = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  const messages: RecordedMessage[] = [];
  const contents: RecordedContent[] = [];
  let contentFailure: number | undefined;
  const typingIndicators: RecordedTypingIndicator[] = [];
  const requests: RecordedTwilioRequest[] = [];
  let pendingFailures: Array<{ status: number; body: Partial<TwilioErrorBody> | string | undefined }> = [];
  let pendingDelays: number[] = [];
  let bodyFailures: Array<{ matches: (body: string) => boolean; status: number }> = [];
  let outages: Array<{ from: number; until: number; status: number; method: string | undefined }> = [];
  let pendingHolds: Array<{ accepted: boolean; to: string | undefined; arrived: (held: HeldCreate) => void }> = [];
  let messageWaiters: Array<() => void> = [];

  const notifyMessageWaiters = (): void => {
    const waiters = messageWaiters;
    messageWaiters = [];
    for (const waiter of waiters) waiter();
  };

  const messagesPath = `/2010-04-01/Accounts/${accountSid}/Messages.json`;
  const messagePathPattern = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/([^/]+)\.json$/;

  async function createMessage(
    request: IncomingMessage,
    form: URLSearchParams,
    params: Record<string, string>,
    receivedAt: number,
    receivedAtHrtime: bigint,
  ): Promise<[number, unknown]> {
    const hold = pendingHolds.find((candidate) => candidate.to === undefined || candidate.to === params.To);
    if (hold !== undefined) {
      pendingHolds = pendingHolds.filter((candidate) => candidate !== hold);
      const released = new Promise<void>((resolve) => hold.arrived({ params, release: resolve }));
      if (!hold.accepted) {
        await released;
        return [500, twilioErrorBody(500)];
      }
      const answer = await createMessage(request, form, params, receivedAt, receivedAtHrtime);
      await released;
      return answer;
    }
    const refusal = bodyFailures.find((rule) => rule.matches(params.Body ?? ''));
    if (refusal !== undefined) return [refusal.status, twilioErrorBody(refusal.status)];
    const delay = pendingDelays.shift();
    const failure = pendingFailures.shift();
    if (delay !== undefined) await sleep(delay);
    if (failure !== undefined) {
      const body = typeof failure.body === 'string' ? failure.body : twilioErrorBody(failure.status, failure.body);
      return [failure.status, body];
    }
    const to = params.To;
    const from = params.From;
    const messagingServiceSid = params.MessagingServiceSid;
    const rendered = renderContent(params.ContentSid, params.ContentVariables);
    if (rendered && contentFailure !== undefined) {
      return [contentFailure, twilioErrorBody(contentFailure, { code: 63027, message: 'This sender may not send this content' })];
    }
    const body = rendered?.body ?? params.Body ?? '';
    const mediaUrls = form.getAll('MediaUrl');
    const contentSid = params.ContentSid;
    if (to === undefined || to === '') return [400, twilioErrorBody(400, { code: 21604, message: "A 'To' phone number is required." })];
    if ((from === undefined || from === '') && (messagingServiceSid === undefined || messagingServiceSid === '')) {
      return [400, twilioErrorBody(400, { code: 21603, message: "A 'From' phone number is required." })];
    }
    if (contentSid !== undefined && contentSid !== '') {
      // A Content template: `HX` + 32 hex, with ContentVariables (when given) a JSON object of strings.
      if (!/^HX[0-9a-fA-F]{32}$/.test(contentSid)) return [400, twilioErrorBody(400, { code: 21655, message: 'The ContentSid is Invalid' })];
      if (!contentVariablesValid(params.ContentVariables)) {
        return [400, twilioErrorBody(400, { code: 21656, message: 'The ContentVariables Parameter is invalid' })];
      }
    }
    if (body === '' && mediaUrls.length === 0 && (contentSid === undefined || contentSid === '')) {
      return [400, twilioErrorBody(400, { code: 21619, message: 'A text message body or media urls must be specified.' })];
    }
    if (from !== undefined && from.startsWith('whatsapp:') !== to.startsWith('whatsapp:')) {
      return [400, twilioErrorBody(400, { code: 21910, message: 'Invalid From and To pair. From and To should be of the same channel' })];
    }
    if (body.length > messageBodyLimit) {
      return [400, twilioErrorBody(400, { code: 21617, message: `The concatenated message body exceeds the ${messageBodyLimit} character limit.` })];
    }
    const sid = newSid(mediaUrls.length > 0 ? 'MM' : 'SM');
    const now = twilioDate(new Date(receivedAt));
    const uri = `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`;
    const resource: TwilioMessageResource = {
      account_sid: accountSid,
      api_version: '2010-04-01',
      body,
      date_created: now,
      date_sent: null,
      date_updated: now,
      direction: 'outbound-api',
      error_code: null,
      error_message: null,
      from: from ?? null,
      messaging_service_sid: messagingServiceSid ?? null,
      num_media: String(mediaUrls.length),
      num_segments: '1',
      price: null,
      price_unit: 'USD',
      sid,
      status: from === undefined ? 'accepted' : 'queued',
      subresource_uris: {
        media: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}/Media.json`,
        feedback: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}/Feedback.json`,
      },
      to,
      uri,
    };
    messages.push({
      sid,
      accountSid,
      to,
      from: from ?? null,
      body,
      contentSid,
      contentVariables: params.ContentVariables,
      messagingServiceSid,
      statusCallback: params.StatusCallback,
      mediaUrls,
      params,
      headers: request.headers,
      receivedAt,
      receivedAtHrtime,
      resource,
      ...(rendered?.choices ? { choices: rendered.choices } : {}),
      ...(rendered?.button !== undefined ? { button: rendered.button } : {}),
    });
    notifyMessageWaiters();
    return [201, resource];
  }

  /** The Messages list: To and From filters, newest first, one page of PageSize (default 50). */
  function listMessages(params: Record<string, string>): [number, unknown] {
    const pageSize = Math.min(1000, Math.max(1, Number(params.PageSize ?? '50') || 50));
    const found = messages
      .filter((message) => (params.To === undefined || message.to === params.To) && (params.From === undefined || message.from === params.From))
      .reverse()
      .slice(0, pageSize)
      .map((message) => ({ ...message.resource, direction: 'outbound-api' }));
    const uri = `${messagesPath}?PageSize=${pageSize}&Page=0`;
    return [
      200,
      {
        messages: found,
        end: Math.max(0, found.length - 1),
        first_page_uri: uri,
        next_page_uri: null,
        page: 0,
        page_size: pageSize,
        previous_page_uri: null,
        start: 0,
        uri,
      },
    ];
  }

  function createTypingIndicator(params: Record<string, string>, receivedAt: number, receivedAtHrtime: bigint): [number, unknown] {
    const channel = params.channel;
    const messageId = params.messageId;
    if (channel === undefined || messageId === undefined || messageId === '') {
      return [400, twilioErrorBody(400, { code: 21211, message: "Missing required parameter 'channel' or 'messageId'" })];
    }
    if (channel !== 'whatsapp') {
      return [400, twilioErrorBody(400, { code: 20001, message: `Unsupported channel '${channel}'` })];
    }
    typingIndicators.push({ channel, messageId, params, receivedAt, receivedAtHrtime });
    return [200, { success: true }];
  }

  /** A created Content's body and answers with `variables` filled in (undefined: not one of ours). */
  function renderContent(sid: string | undefined, variables: string | undefined): { body: string; choices?: RenderedChoice[]; button?: string } | undefined {
    const content = contents.find((candidate) => candidate.sid === sid);
    if (!content) return undefined;
    let values: Record<string, string> = {};
    try {
      values = JSON.parse(variables ?? '{}') as Record<string, string>;
    } catch {
      values = {};
    }
    const fill = (text: unknown) => String(text ?? '').replace(/\{\{(\d+)\}\}/g, (_, name: string) => values[name] ?? '');
    const quick = content.types['twilio/quick-reply'] as { body: string; actions: { title: string; id: string }[] } | undefined;
    if (quick) return { body: fill(quick.body), choices: quick.actions.map((action) => ({ title: fill(action.title), id: fill(action.id) })) };
    const list = content.types['twilio/list-picker'] as { body: string; button: string; items: { item: string; id: string }[] } | undefined;
    if (list) return { body: fill(list.body), button: fill(list.button), choices: list.items.map((item) => ({ title: fill(item.item), id: fill(item.id) })) };
    const plain = content.types['twilio/text'] as { body: string } | undefined;
    return { body: fill(plain?.body) };
  }

  /** `POST /v1/Content`: validates quick replies (≤ 3 answers of ≤ 20 characters) and lists (≤ 10 of ≤ 24, a button of ≤ 20) as Twilio does. */
  function createContent(raw: string): [number, unknown] {
    if (contentFailure !== undefined) return [contentFailure, twilioErrorBody(contentFailure)];
    let request: { friendly_name?: string; language?: string; types?: Record<string, unknown> };
    try {
      request = JSON.parse(raw) as typeof request;
    } catch {
      return [400, twilioErrorBody(400, { message: 'Invalid JSON' })];
    }
    const types = request.types ?? {};
    const quick = types['twilio/quick-reply'] as { actions?: { title?: string }[] } | undefined;
    const list = types['twilio/list-picker'] as { button?: string; items?: { item?: string }[] } | undefined;
    if (quick && (!quick.actions?.length || quick.actions.length > 3 || quick.actions.some((action) => (action.title ?? '').length > 20))) {
      return [400, twilioErrorBody(400, { message: 'quick-reply: 1 to 3 actions with titles of at most 20 characters' })];
    }
    if (list && (!list.items?.length || list.items.length > 10 || list.items.some((item) => (item.item ?? '').length > 24))) {
      return [400, twilioErrorBody(400, { message: 'list-picker: 1 to 10 items of at most 24 characters' })];
    }
    if (list && (!list.button || list.button.length > 20)) {
      return [400, twilioErrorBody(400, { message: 'list-picker: a button of 1 to 20 characters' })];
    }
    if (Object.keys(types).length === 0) return [400, twilioErrorBody(400, { message: 'types is required' })];
    const sid = newSid('HX');
    contents.push({ sid, friendlyName: request.friendly_name ?? '', types });
    return [201, { sid, account_sid: accountSid, friendly_name: request.friendly_name ?? '', language: request.language ?? 'en', types, variables: {} }];
  }

  async function route(
    request: IncomingMessage,
    path: string,
    form: URLSearchParams,
    params: Record<string, string>,
    receivedAt: number,
    receivedAtHrtime: bigint,
  ): Promise<[number, unknown]> {
    if (request.headers.authorization !== expectedAuthorization) {
      return [401, twilioErrorBody(401, { detail: 'Your AccountSid or AuthToken was incorrect.' })];
    }
    const method = request.method ?? 'GET';
    const outage = outages.find(
      (window) => window.from <= receivedAt && receivedAt < window.until && (window.method === undefined || window.method === method),
    );
    if (outage !== undefined && path === messagesPath) return [outage.status, twilioErrorBody(outage.status)];
    if (method === 'POST' && path === messagesPath) {
      return createMessage(request, form, params, receivedAt, receivedAtHrtime);
    }
    if (method === 'GET' && path === messagesPath) {
      return listMessages(params);
    }
    // The account itself (the service's credential check at start).
    if (method === 'GET' && path === `/2010-04-01/Accounts/${accountSid}.json`) {
      return [200, { sid: accountSid, friendly_name: 'Fake account', status: 'active', type: 'Full', uri: path }];
    }
    if (method === 'POST' && path === '/v2/Indicators/Typing.json') {
      return createTypingIndicator(params, receivedAt, receivedAtHrtime);
    }
    const messageMatch = messagePathPattern.exec(path);
    if (method === 'GET' && messageMatch?.[1] === accountSid) {
      const found = messages.find((message) => message.sid === messageMatch[2]);
      if (found !== undefined) return [200, found.resource];
    }
    return [404, twilioErrorBody(404, { message: `The requested resource ${path} was not found` })];
  }

  // Inbound media: the API host checks auth and redirects, the media host serves the bytes.
  const media = new Map<string, FakeMediaOptions>();
  const mediaRequests: RecordedMediaRequest[] = [];
  const mediaPathPattern = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/([^/]+)\/Media\/([^/]+)$/;
  const mediaHost = createServer((request, response) => {
    const sid = new URL(request.url ?? '/', 'http://fake-media.invalid').pathname.replace(/^\/media\//, '');
    const recorded: RecordedMediaRequest = { path: request.url ?? '/', authorization: request.headers.authorization, bytesSent: 0 };
    mediaRequests.push(recorded);
    const item = media.get(sid);
    if (item === undefined || item.status !== undefined) {
      response.writeHead(item?.status ?? 404, { 'content-type': 'application/xml' });
      response.end('<Error><Code>NoSuchKey</Code></Error>');
      return;
    }
    response.writeHead(200, { 'content-type': item.contentType, ...(item.chunked || item.stall ? {} : { 'content-length': item.body.length }) });
    if (item.stall) {
      response.write(item.body.subarray(0, 16));
      recorded.bytesSent = 16;
      return;
    }
    let offset = 0;
    const pump = (): void => {
      while (offset < item.body.length && !response.destroyed) {
        const piece = item.body.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        recorded.bytesSent = offset;
        if (!response.write(piece)) {
          response.once('drain', pump);
          return;
        }
      }
      if (!response.destroyed) response.end();
    };
    pump();
  });
  await new Promise<void>((resolve, reject) => {
    mediaHost.once('error', reject);
    mediaHost.listen(0, '127.0.0.1', () => resolve());
  });
  const mediaBaseUrl = `http://127.0.0.1:${(mediaHost.address() as AddressInfo).port}`;

  const server = createServer((request, response) => {
    const receivedAt = Date.now();
    const receivedAtHrtime = process.hrtime.bigint();
    const mediaMatch = mediaPathPattern.exec(new URL(request.url ?? '/', 'http://fake-twilio.invalid').pathname);
    if (request.method === 'GET' && mediaMatch !== null) {
      const authorized = request.headers.authorization === expectedAuthorization && mediaMatch[1] === accountSid;
      const found = mediaMatch[3] !== undefined && media.has(mediaMatch[3]);
      const status = !authorized ? 401 : found ? 307 : 404;
      requests.push({ method: 'GET', path: mediaMatch[0], params: {}, status, receivedAt });
      if (status === 307) {
        response.writeHead(307, { location: `${mediaBaseUrl}/media/${mediaMatch[3]}`, 'content-length': 0 });
        response.end();
      } else sendJson(response, status, twilioErrorBody(status));
      return;
    }
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://fake-twilio.invalid');
      const text = await readBody(request);
      const form = new URLSearchParams(request.method === 'GET' ? url.search : text);
      const params = firstValues(form);
      let status: number;
      let body: unknown;
      try {
        [status, body] =
          request.method === 'POST' && url.pathname === '/v1/Content'
            ? request.headers.authorization === expectedAuthorization
              ? createContent(text)
              : [401, twilioErrorBody(401)]
            : await route(request, url.pathname, form, params, receivedAt, receivedAtHrtime);
      } catch (error) {
        status = 500;
        body = twilioErrorBody(500, { detail: error instanceof Error ? error.message : String(error) });
      }
      requests.push({ method: request.method ?? 'GET', path: url.pathname, params, status, receivedAt });
      sendJson(response, status, body);
    })();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    contents,
    failContent(status) {
      contentFailure = status;
    },
    accountSid,
    authToken,
    messages,
    typingIndicators,
    requests,
    mediaRequests,
    addMedia(served) {
      const sid = newSid('ME');
      media.set(sid, served);
      return `http://127.0.0.1:${port}/2010-04-01/Accounts/${accountSid}/Messages/${newSid('MM')}/Media/${sid}`;
    },
    failNext(count, status, body) {
      for (let index = 0; index < count; index += 1) pendingFailures.push({ status, body });
    },
    failMatching(matches, status) {
      bodyFailures.push({ matches, status });
    },
    failDuring(milliseconds, status, only) {
      const from = Math.max(Date.now(), ...outages.map((window) => window.until));
      outages.push({ from, until: from + milliseconds, status, method: only === undefined ? undefined : only === 'create' ? 'POST' : 'GET' });
    },
    holdNext({ accepted, to }) {
      return new Promise((arrived) => pendingHolds.push({ accepted, to, arrived }));
    },
    delayNext(milliseconds, count = 1) {
      for (let index = 0; index < count; index += 1) pendingDelays.push(milliseconds);
    },
    waitForMessages(count, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          if (messages.length < count) return false;
          clearTimeout(timer);
          resolve([...messages]);
          return true;
        };
        const timer = setTimeout(() => {
          messageWaiters = messageWaiters.filter((waiter) => waiter !== listener);
          const bodies = messages.map((message) => JSON.stringify(message.body)).join(', ');
          reject(new Error(`fake Twilio: expected ${count} message(s) within ${timeoutMs} ms, got ${messages.length}: [${bodies}]`));
        }, timeoutMs);
        const listener = (): void => {
          if (!check()) messageWaiters.push(listener);
        };
        listener();
      });
    },
    reset() {
      messages.length = 0;
      // Content resources outlive a reset, as Twilio's do (a service caches their SIDs).
      contentFailure = undefined;
      typingIndicators.length = 0;
      requests.length = 0;
      mediaRequests.length = 0;
      media.clear();
      pendingFailures = [];
      pendingDelays = [];
      pendingHolds = [];
      outages = [];
      bodyFailures = [];
    },
    async close() {
      await new Promise<void>((resolve) => {
        mediaHost.close(() => resolve());
        mediaHost.closeAllConnections();
      });
      return new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
