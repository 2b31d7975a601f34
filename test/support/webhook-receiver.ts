/**
 * A local Slack-compatible webhook receiver: records every JSON body it gets and answers with
 * a status the test chooses (or holds the request open, to catch a sender mid-request).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: { text?: string; blocks?: unknown[] };
  receivedAt: number;
}

export async function startWebhookReceiver() {
  const received: ReceivedWebhook[] = [];
  let answer: (path: string) => number | 'hold' = () => 200;
  const held: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      received.push({ path, headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'), receivedAt: Date.now() });
      const status = answer(path);
      if (status === 'hold') {
        held.push(response);
        return;
      }
      response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'error');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string) => `${base}${path}`,
    received,
    answerWith(next: (path: string) => number | 'hold') {
      answer = next;
    },
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
