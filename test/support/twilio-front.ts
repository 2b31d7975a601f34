/**
 * A front for the fake Twilio API that answers chosen requests itself (e.g. the typing
 * indicator endpoint with a 500) and forwards everything else untouched, so a test can make
 * one Twilio endpoint fail without changing the fake. Point the service at `baseUrl`.
 */
import { createServer, request as forward } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeTwilio } from './harness.js';

export interface TwilioFront extends FakeTwilio {
  /** Requests the front answered itself, by path. */
  intercepted: string[];
}

export async function startTwilioFront(twilio: FakeTwilio, answer: (method: string, path: string) => number | undefined): Promise<TwilioFront> {
  const target = new URL(twilio.baseUrl);
  const intercepted: string[] = [];
  const server = createServer((incoming, outgoing) => {
    const path = new URL(incoming.url ?? '/', 'http://front.invalid').pathname;
    const status = answer(incoming.method ?? 'GET', path);
    if (status !== undefined) {
      intercepted.push(path);
      incoming.resume();
      outgoing.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 20500, message: 'Internal Server Error', status }));
      return;
    }
    const upstream = forward(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(outgoing);
      },
    );
    upstream.on('error', () => outgoing.writeHead(502).end());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(Object.create(twilio) as FakeTwilio, {
    baseUrl: `http://127.0.0.1:${port}`,
    intercepted,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await twilio.close();
    },
  });
}
