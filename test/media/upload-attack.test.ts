/**
 * Anonymous visitors trying to take the worker down with uploads, driven from outside against
 * separate web and worker processes with the production heap flag and the production media,
 * coalescing and concurrency settings, and the real model provider (the OpenAI-compatible stub):
 * three visitors at once each upload five 16 MiB files (a PNG signature and zeros; then PDFs) and send
 * four messages naming the same five ids. An id serves one message (the others get 409), the
 * worker's peak RSS stays under the bound the README states, and another customer is answered
 * meanwhile by the same worker process.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually, ownRedisDatabase, PUBLIC_BASE_URL, startServiceProcess, testEnv, type ServiceProcess } from '../support/harness.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { findFreePort, startMongo, type MongoHandle } from '../support/services.js';
import { recordFigures } from '../delivery/burst.js';

/** The worker's memory bound with the default media settings (README "Memory"). */
const WORKER_RSS_BOUND_MIB = 720;
const FILE_BYTES = 16 * 1024 * 1024;
const VISITORS = 3;
const MESSAGES_PER_VISITOR = 4;

let stub: OpenAIStub;
/** Its own FerretDB: the attack's 16 MiB files keep a server busy scanning chunks after the test, which must not slow the suites that follow. */
let ferret: MongoHandle | undefined;
let web: ServiceProcess | undefined;
let worker: ServiceProcess | undefined;
let base: string;

/** A process's resident set now and at its peak (VmRSS, VmHWM), in MiB. */
function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMiB: Math.round(kib('VmRSS') / 1024), peakMiB: Math.round(kib('VmHWM') / 1024) };
}

beforeAll(async () => {
  stub = await startOpenAIStub();
  ferret = await startMongo();
  const port = await findFreePort();
  base = `http://127.0.0.1:${port}`;
  const env = testEnv('http://127.0.0.1:9', {
    PORT: String(port),
    OPENAI_BASE_URL: stub.baseUrl,
    ...ownRedisDatabase(9),
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/upload_attack`,
    // Production's heap flag (npm start) and defaults: media caps, quiet period, concurrency, lock TTL.
    NODE_OPTIONS: '--max-old-space-size=1024',
    MEDIA_MAX_BYTES: '',
    COALESCE_MS: '',
    WORKER_CONCURRENCY: '',
    TURN_LOCK_TTL_MS: '',
    // The test polls each visitor's history.
    WEB_VISITOR_REQUESTS_PER_MINUTE: '100000',
    WEB_IP_REQUESTS_PER_MINUTE: '100000',
  });
  for (const name of Object.keys(env)) if (env[name] === '') delete env[name];
  [web, worker] = await Promise.all([startServiceProcess(env, 'web'), startServiceProcess(env, 'worker')]);
}, 90_000);

afterAll(async () => {
  await Promise.all([web?.kill(), worker?.kill()]);
  await stub.close();
  await ferret?.stop();
});

async function session(): Promise<Record<string, string>> {
  const response = await fetch(`${base}/api/widget/session`, {
    method: 'POST',
    headers: { origin: PUBLIC_BASE_URL, 'content-type': 'application/json' },
    body: JSON.stringify({ siteKey: 'demo' }),
  });
  expect(response.status).toBe(200);
  const { token } = (await response.json()) as { token: string };
  return { origin: PUBLIC_BASE_URL, authorization: `Bearer ${token}` };
}

const post = (headers: Record<string, string>, body: Record<string, unknown>) =>
  fetch(`${base}/api/widget/messages`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ clientMessageId: randomUUID(), ...body }),
  });

/** Fails at once when the worker process is gone (with what it printed last) or its peak RSS is over the bound. */
function workerAlive(): void {
  if (!existsSync(`/proc/${worker!.pid}`)) throw new Error(`the worker process died:\n${worker!.output().slice(-1500)}`);
  const { peakMiB } = memoryOf(worker!.pid);
  if (peakMiB > WORKER_RSS_BOUND_MIB) throw new Error(`the worker's peak RSS is ${peakMiB} MiB, over the ${WORKER_RSS_BOUND_MIB} MiB bound`);
}

async function assistantReplies(headers: Record<string, string>): Promise<string[]> {
  workerAlive();
  const history = (await (await fetch(`${base}/api/widget/history`, { headers })).json()) as { messages: { role: string; text: string }[] };
  return history.messages.filter((message) => message.role === 'assistant').map((message) => message.text);
}

/**
 * The files: a PNG signature and zeros (no image: never decoded into a part), and PDFs (sent as
 * they are: each turn's bytes are what MEDIA_MAX_TURN_BYTES lets through, the worker's what
 * MEDIA_MAX_WORKER_BYTES does).
 */
const VARIANTS = [
  { kind: 'png-zeros', files: 5, name: 'photo.png', head: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), note: 'Not understood: unreadable' },
  // Two are enough for a turn's whole media bytes (one fits, one is left out), at less reading.
  { kind: 'pdf', files: 2, name: 'invoice.pdf', head: Buffer.from('%PDF-1.4\n'), note: 'Not understood: over turn limit' },
] as const;

describe.each(VARIANTS)('three anonymous visitors, each with $files 16 MiB uploads ($kind) named by four messages', ({ kind, files, name, head, note }) => {
  test('one message per upload (409 for the rest), the worker stays under its memory bound, and another customer is answered', async () => {
    const file = Buffer.alloc(FILE_BYTES, kind === 'pdf' ? 0x20 : 0);
    head.copy(file);
    const before = memoryOf(worker!.pid);
    const started = Date.now();
    stub.reset();

    const attack = async () => {
      const headers = await session();
      const ids: string[] = [];
      for (let index = 0; index < files; index += 1) {
        const response = await fetch(`${base}/api/widget/uploads?name=${index}-${name}`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/octet-stream' },
          body: file,
        });
        expect(response.status).toBe(201);
        ids.push(((await response.json()) as { id: string }).id);
      }
      const sent = await Promise.all(
        Array.from({ length: MESSAGES_PER_VISITOR }, async (_, index) => {
          const response = await post(headers, { text: `look at these ${index}`, attachments: ids });
          return { status: response.status, body: (await response.json()) as Record<string, unknown> };
        }),
      );
      return { headers, sent };
    };
    const visitors = await Promise.all(Array.from({ length: VISITORS }, attack));
    const uploadedMs = Date.now() - started;

    // Another customer writes while the attack's turns run.
    const customer = await session();
    expect((await post(customer, { text: 'Do you open on Sundays?' })).status).toBe(202);
    const answered = await eventually(async () => (await assistantReplies(customer))[0], 120_000);
    const customerAnsweredMs = Date.now() - started - uploadedMs;
    // A file's chunks are read by _id (16 MiB: 64 reads), so this takes seconds on an idle machine.
    for (const visitor of visitors) {
      await eventually(async () => (await assistantReplies(visitor.headers))[0], 450_000).catch((error: unknown) => {
        // What the worker was doing: the one clue a run on a loaded machine leaves.
        throw new Error(`${String(error)}; model requests ${stub.requests.length}; the worker's last lines:\n${worker!.output().slice(-4000)}`);
      });
    }
    const attackAnsweredMs = Date.now() - started - uploadedMs;

    const after = memoryOf(worker!.pid);
    // The same worker process answered everyone: it never died.
    expect(worker!.output()).not.toContain('heap out of memory');
    expect(answered).toBe('This is the stub model answering.');
    expect(after.peakMiB).toBeLessThanOrEqual(WORKER_RSS_BOUND_MIB);
    // Bytes that are no image never reach the model; of the PDFs one fits a turn (16 of 24 MiB): the model was told of the rest.
    const largestRequest = Math.max(...stub.requests.map((request) => JSON.stringify(request.body).length));
    expect(largestRequest).toBeLessThan(kind === 'pdf' ? 23 * 1024 * 1024 : 256 * 1024);
    expect(stub.requests.some((request) => JSON.stringify(request.body).includes(note))).toBe(true);
    for (const { sent } of visitors) {
      expect(sent.map(({ status }) => status).sort()).toEqual([202, 409, 409, 409]);
      const conflict = sent.find(({ status }) => status === 409);
      expect(conflict?.body).toEqual({
        error: expect.stringContaining('was already sent with another message'),
        attachment: expect.stringMatching(/^[0-9a-f]{24}$/),
      });
    }
    expect(web!.output()).toContain('"reason":"attachment_reused"');
    await recordFigures(`upload-attack-${kind}`, {
      workerPeakMiB: after.peakMiB,
      workerPeakBeforeMiB: before.peakMiB,
      boundMiB: WORKER_RSS_BOUND_MIB,
      largestRequest,
      uploadedMs,
      customerAnsweredMs,
      attackAnsweredMs,
    });
  }, 600_000);
});
