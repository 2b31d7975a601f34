/**
 * Several messages that crash the worker, sent at once from several numbers beside healthy
 * customers, each answered by its own turn in the same worker process: the first death makes every
 * batch that was running a suspect, and the next worker runs each suspect in a child process of its
 * own; a crashing message kills only its child and is quarantined there and then, while the worker
 * goes on. So N crashing messages sent at once cost one worker restart (the crowd's death; at most
 * N + 2 is the promise), every crashing message gets one apology and is recorded failed as
 * `poison`, and every healthy customer is answered once, within one restart, never apologised to.
 */
import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterEach, expect, test } from '@jest/globals';
import { SUSPECT_CHILD_FLAG } from '../../src/queue/suspect-child.js';
import { inboundMessageId } from '../../src/store/transcript-store.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { RUN_TS } from '../support/run-ts.js';
import { transcriptsWritten } from '../support/settled.js';
import { startWorkerProcess, type WorkerProcess } from '../support/spawn-worker.js';

let harness: Harness | undefined;
const children: WorkerProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
  await harness?.close();
  harness = undefined;
});

const CRASHING = 4;
const HEALTHY = 3;

/** How long a suspect turn's child takes to be ready for its batch (the test's worker entry, forked as a worker forks it), for the record. */
async function childStartMs(env: Record<string, string>, queuePrefix: string): Promise<number> {
  const started = performance.now();
  const child = fork('test/support/worker-process.ts', [SUSPECT_CHILD_FLAG], {
    execArgv: [...RUN_TS],
    env: { ...process.env, ...env, TEST_QUEUE_PREFIX: queuePrefix, TEST_SCRIPT: 'poison' },
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  try {
    await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', reject);
    });
    return Math.round(performance.now() - started);
  } finally {
    child.kill('SIGKILL');
  }
}

test('N crashing messages at once cost at most N + 2 worker restarts; every healthy customer is answered once, within one restart', async () => {
  const h = await startHarness({
    worker: false,
    env: { TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '200' },
    script: ({ userText }) => ({ text: `Answer to: ${userText}` }),
  });
  harness = h;
  const received = (customer: string) => h.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  const attackers = Array.from({ length: CRASHING }, (_, index) => `whatsapp:+44770096110${index}`);
  const customers = Array.from({ length: HEALTHY }, (_, index) => `whatsapp:+44770096120${index}`);
  const poisonSids = attackers.map(() => newMessageSid());

  // Sent at once, before a worker runs: the first worker takes every one of them up together.
  const sentAt = performance.now();
  const sent = await Promise.all([
    ...attackers.map((from, index) => h.sendWhatsapp({ from, body: `POISON ${index}`, messageSid: poisonSids[index] })),
    ...customers.map((from, index) => h.sendWhatsapp({ from, body: `what are your hours, ${index}?` })),
  ]);
  expect(sent.map((response) => response.status)).toEqual(Array.from({ length: CRASHING + HEALTHY }, () => 200));

  const settled = () => [...attackers, ...customers].every((customer) => received(customer).length > 0);
  // A worker process that dies is restarted, as a supervisor would; past N + 2 restarts the test stops counting.
  let restarts = 0;
  /** How many restarts each healthy customer waited, and how long (for the record). */
  const answeredAfter: Record<string, number> = {};
  const answeredInMs: Record<string, number> = {};
  const watch = setInterval(() => {
    for (const customer of customers) if (received(customer).length > 0) answeredInMs[customer] ??= Math.round(performance.now() - sentAt);
  }, 50);
  try {
    for (;;) {
      const worker = await startWorkerProcess(h.env, h.queuePrefix, 0, { TEST_SCRIPT: 'poison' });
      children.push(worker);
      let exited = false;
      void worker.exited.then(() => (exited = true));
      await eventually(() => settled() || exited || undefined, 120_000);
      for (const customer of customers) if (received(customer).length > 0) answeredAfter[customer] ??= restarts;
      if (settled()) break;
      restarts += 1;
      if (restarts > CRASHING + 2) break;
    }
  } finally {
    clearInterval(watch);
  }

  // The measured figures, for the record (test-artifacts/ is not committed).
  mkdirSync('test-artifacts/delivery', { recursive: true });
  const record = { crashing: CRASHING, healthy: HEALTHY, restarts, answeredAfter, answeredInMs, settled: settled() };
  writeFileSync('test-artifacts/delivery/poison-crowd.json', JSON.stringify(record));

  expect(restarts).toBeLessThanOrEqual(CRASHING + 2);
  // Every healthy customer is answered once, by the first worker or the one restarted after the crowd's death.
  for (const customer of customers) expect(received(customer)).toEqual([expect.stringMatching(/^Slow answer to: what are your hours, \d\?$/)]);
  expect(Object.values(answeredAfter)).toHaveLength(HEALTHY);
  for (const waited of Object.values(answeredAfter)) expect(waited).toBeLessThanOrEqual(1);
  // Every crashing message is quarantined: one apology, recorded failed as poison.
  for (const attacker of attackers) expect(received(attacker)).toEqual([APOLOGY_TEXT]);
  await transcriptsWritten(h.services);
  for (const sid of poisonSids)
    expect(await h.services.transcripts.messages.findById(inboundMessageId('whatsapp', sid)).lean()).toMatchObject({
      status: 'failed',
      errorMessage: expect.stringContaining('given up on (poison)'),
    });
  writeFileSync('test-artifacts/delivery/poison-crowd.json', JSON.stringify({ ...record, childStartMs: await childStartMs(h.env, h.queuePrefix) }));
}, 600_000);
