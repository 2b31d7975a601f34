/**
 * The twilio library's client, with its HTTP transport (the library's supported `httpClient`
 * hook) sending each request straight through node's http(s) module on a keep-alive agent:
 * the library's own transport goes through axios, which cost more CPU per send than the
 * request itself. Everything else — resources, serialization, errors (`RestException`),
 * paging — is the library's. The https agent is the one the library builds (its keep-alive
 * pool, and HTTP_PROXY / TWILIO_CA_BUNDLE as it reads them). Optionally every Twilio host
 * (api., messaging., content.) is rewritten to another API base URL (`TWILIO_API_BASE_URL`),
 * keeping the path.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import twilio from 'twilio';
import type RequestClient from 'twilio/lib/base/RequestClient.js';

const TIMEOUT_MS = 15_000;

/** What the library's transport answers: status, headers and body. */
type Answer<TData> = ReturnType<typeof twilio.RequestClient.prototype.request<TData>>;

/** `key=value&…` as the library's transport encodes forms and queries: arrays repeat their key, absent values are left out. */
function formEncode(values: unknown): string {
  if (typeof values !== 'object' || values === null) return '';
  const pairs: string[] = [];
  const add = (key: string, value: unknown) => {
    if (value === undefined) return;
    const text = value === null ? '' : value instanceof Date ? value.toISOString() : String(value);
    pairs.push(`${encodeURIComponent(key)}=${encodeURIComponent(text)}`);
  };
  for (const [key, value] of Object.entries(values)) {
    if (Array.isArray(value)) for (const item of value) add(key, item);
    else add(key, value);
  }
  return pairs.join('&');
}

class DirectRequestClient extends twilio.RequestClient {
  /**
   * Plain-http keep-alive pools (a rewritten base URL: a local fake or proxy), one per Twilio host
   * the request was meant for (api., messaging.), as production's https pools are per host: with
   * one shared pool, typing indicators queued sends behind them once 20 were in flight.
   */
  private readonly httpAgents = new Map<string, HttpAgent>();
  private readonly httpsAgent: HttpsAgent;

  constructor(private readonly baseUrl: string | undefined) {
    super({ timeout: TIMEOUT_MS });
    // The agent the library made for its own transport (keep-alive, proxy, CA bundle).
    this.httpsAgent = this.axios.defaults.httpsAgent as HttpsAgent;
  }

  private httpAgent(twilioHost: string): HttpAgent {
    const agent = this.httpAgents.get(twilioHost) ?? new HttpAgent({ keepAlive: true, maxSockets: 20, maxFreeSockets: 20 });
    this.httpAgents.set(twilioHost, agent);
    return agent;
  }

  override async request<TData>(options: RequestClient.RequestOptions<TData>): Answer<TData> {
    let url = new URL(options.uri);
    const twilioHost = url.host;
    if (this.baseUrl) url = new URL(`${url.pathname}${url.search}`, `${this.baseUrl}/`);
    if (options.params) {
      const query = formEncode(options.params);
      if (query) url.search = url.search ? `${url.search}&${query}` : query;
    }
    const headers: Record<string, string> = { Connection: 'keep-alive', ...options.headers };
    if (options.username && options.password) {
      headers.Authorization = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
    } else if (options.authStrategy) {
      headers.Authorization = await options.authStrategy.getAuthString();
    }
    let body: string | undefined;
    if (options.data !== undefined && options.data !== null) {
      const type = headers['Content-Type'];
      if (type === 'application/x-www-form-urlencoded') body = formEncode(options.data);
      else if (type === 'application/json') body = typeof options.data === 'string' ? options.data : JSON.stringify(options.data);
    }
    if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
    const https = url.protocol === 'https:';
    const timeoutMs = options.timeout ?? TIMEOUT_MS;
    const response = await new Promise<{ statusCode: number; body: string; headers: IncomingHttpHeaders }>((resolve, reject) => {
      const request = (https ? httpsRequest : httpRequest)(url, {
        method: options.method.toUpperCase(),
        headers,
        agent: https ? this.httpsAgent : this.httpAgent(twilioHost),
      });
      // The whole exchange, like the library's transport: a request unanswered by then is abandoned.
      const timer = setTimeout(() => request.destroy(Object.assign(new Error(`timeout of ${timeoutMs}ms exceeded`), { code: 'ECONNABORTED' })), timeoutMs);
      request.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      request.once('response', (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.once('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
        incoming.once('end', () => {
          clearTimeout(timer);
          resolve({ statusCode: incoming.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: incoming.headers });
        });
      });
      request.end(body);
    });
    // The body stays text: the library parses it (and makes a `RestException` of an error status).
    return response as unknown as Awaited<Answer<TData>>;
  }
}

export function createTwilioClient(settings: { accountSid: string; authToken: string; apiBaseUrl?: string | undefined }): twilio.Twilio {
  return twilio(settings.accountSid, settings.authToken, {
    httpClient: new DirectRequestClient(settings.apiBaseUrl),
    autoRetry: false,
  });
}
