/**
 * The twilio library's HTTP transport (node's http on a keep-alive agent, not axios) as Twilio
 * sees it: the form and query it receives, the credentials, one connection reused across
 * sends; and as the sender sees Twilio's answers: an error status is the library's
 * `RestException` with Twilio's code, a dropped connection an error with no status (the
 * outcome unknown, so the ledger looks the send up instead of resending it blind).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, expect, test } from '@jest/globals';
import { createTwilioClient } from '../../channels/whatsapp/twilio-client.js';
import { errorField, errorStatus } from '../../src/errors/index.js';
import { eventually, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN } from '../support/harness.js';

interface Received {
  method: string;
  path: string;
  query: [string, string][];
  form: [string, string][];
  authorization: string | undefined;
  socket: number;
}

let server: Server;
let baseUrl: string;
const received: Received[] = [];
let answer: (request: IncomingMessage, response: ServerResponse) => void;
const sockets = new WeakMap<object, number>();
let nextSocket = 0;

const message = (sid: string, body: string) => ({
  sid,
  status: 'queued',
  body,
  to: 'whatsapp:+15550001111',
  from: 'whatsapp:+14155238886',
  date_created: new Date().toUTCString(),
});

beforeAll(async () => {
  server = createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      if (!sockets.has(request.socket)) sockets.set(request.socket, (nextSocket += 1));
      const url = new URL(request.url ?? '/', 'http://twilio.test');
      received.push({
        method: request.method ?? '',
        path: url.pathname,
        query: [...url.searchParams.entries()],
        form: [...new URLSearchParams(text).entries()],
        authorization: request.headers.authorization,
        socket: sockets.get(request.socket) ?? 0,
      });
      answer(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received.splice(0);
  answer = (_request, response) => {
    response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(message('SM1', 'ok')));
  };
});

const client = () => createTwilioClient({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN, apiBaseUrl: baseUrl });

test('a send reaches Twilio as the form the library built, with the account credentials, and sends share one connection', async () => {
  const twilio = client();
  const body = 'Total: 5 + 3 = 8 & señor "ok" 100%\nline two';
  const sent = await twilio.messages.create({ from: 'whatsapp:+14155238886', to: 'whatsapp:+15550001111', body, statusCallback: 'https://x.test/s?a=1&b=2' });
  await twilio.messages.create({ from: 'whatsapp:+14155238886', to: 'whatsapp:+15550001111', body: 'second' });
  expect(sent.sid).toBe('SM1');
  expect(received[0]).toMatchObject({ method: 'POST', path: `/2010-04-01/Accounts/${TEST_ACCOUNT_SID}/Messages.json` });
  expect(Object.fromEntries(received[0]?.form ?? [])).toEqual({
    From: 'whatsapp:+14155238886',
    To: 'whatsapp:+15550001111',
    Body: body,
    StatusCallback: 'https://x.test/s?a=1&b=2',
  });
  expect(received[0]?.authorization).toBe(`Basic ${Buffer.from(`${TEST_ACCOUNT_SID}:${TEST_AUTH_TOKEN}`).toString('base64')}`);
  expect(received[1]?.socket).toBe(received[0]?.socket);
});

test("a list sends its filters as the query, and reads Twilio's page", async () => {
  answer = (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        messages: [message('SM9', 'found')],
        next_page_uri: null,
        page: 0,
        page_size: 50,
        uri: '/x',
        first_page_uri: '/x',
        previous_page_uri: null,
      }),
    );
  };
  const listed = await client().messages.list({ to: 'whatsapp:+15550001111', from: 'whatsapp:+14155238886', limit: 50, pageSize: 50 });
  expect(listed.map((item) => [item.sid, item.body])).toEqual([['SM9', 'found']]);
  expect(received[0]).toMatchObject({ method: 'GET', form: [] });
  expect(Object.fromEntries(received[0]?.query ?? [])).toEqual({ To: 'whatsapp:+15550001111', From: 'whatsapp:+14155238886', PageSize: '50' });
});

test("an error status is the library's RestException with Twilio's status, code and message", async () => {
  answer = (_request, response) => {
    response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 21211, message: "The 'To' number is not valid.", status: 400 }));
  };
  const failure = await client()
    .messages.create({ from: 'whatsapp:+14155238886', to: 'whatsapp:+15550001111', body: 'x' })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(errorStatus(failure)).toBe(400);
  expect(errorField(failure, 'code')).toBe(21211);
  expect(failure).toMatchObject({ message: "The 'To' number is not valid." });
});

test('a connection dropped before any answer is an error with no HTTP status: the outcome is unknown', async () => {
  answer = (request) => request.socket.destroy();
  const failure = await client()
    .messages.create({ from: 'whatsapp:+14155238886', to: 'whatsapp:+15550001111', body: 'x' })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(errorField(failure, 'code')).toBe('ECONNRESET');
  expect(errorStatus(failure)).toBeUndefined();
});

test('typing indicators get connections of their own (another Twilio host): 20 sends held open do not hold them up', async () => {
  const held: ServerResponse[] = [];
  answer = (request, response) => {
    if (request.url?.includes('/Messages.json')) held.push(response);
    else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true }));
  };
  const twilio = client();
  // As many sends in flight as the pool has connections, every one unanswered.
  const sends = Array.from({ length: 20 }, (_, index) =>
    twilio.messages.create({ from: 'whatsapp:+14155238886', to: 'whatsapp:+15550001111', body: `send ${index}` }),
  );
  await eventually(() => (held.length === 20 ? true : undefined), 10_000);
  await twilio.messaging.v2.typingIndicator.create({ channel: 'whatsapp', messageId: 'SM00000000000000000000000000000001' });
  expect(received.filter((request) => request.path.includes('Typing'))).toHaveLength(1);
  for (const response of held) response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(message('SM1', 'ok')));
  await Promise.all(sends);
});
