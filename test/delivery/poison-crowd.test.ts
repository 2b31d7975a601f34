/**
 * Several messages that crash the worker, sent at once from several numbers beside healthy
 * customers, each answered by its own turn in the same worker process: the first death makes every
 * batch that was running a suspect, and each suspect then runs alone in its worker; one death there
 * quarantines it. So N crashing messages cost at most N + 2 worker restarts (here: the crowd's
 * death, then one per crashing message), every crashing message gets one apology, and every
 * healthy customer gets one answer, never an apology.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterEach, expect, test } from '@jest/globals';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
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

test('N crashing messages at once cost at most N + 2 worker restarts; every healthy customer is answered once', async () => {
  const h = await startHarness({
    worker: false,
    env: { TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '200' },
    script: ({ userText }) => ({ text: `Answer to: ${userText}` }),
  });
  harness = h;
  const received = (customer: string) => h.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  const attackers = Array.from({ length: CRASHING }, (_, index) => `whatsapp:+44770096110${index}`);
  const customers = Array.from({ length: HEALTHY }, (_, index) => `whatsapp:+44770096120${index}`);

  // Sent at once, before a worker runs: the first worker takes every one of them up together.
  const sent = await Promise.all([
    ...attackers.map((from, index) => h.sendWhatsapp({ from, body: `POISON ${index}` })),
    ...customers.map((from, index) => h.sendWhatsapp({ from, body: `what are your hours, ${index}?` })),
  ]);
  expect(sent.map((response) => response.status)).toEqual(Array.from({ length: CRASHING + HEALTHY }, () => 200));

  const settled = () => [...attackers, ...customers].every((customer) => received(customer).length > 0);
  // A worker process that dies is restarted, as a supervisor would; past N + 2 restarts the test stops counting.
  let restarts = 0;
  /** How many restarts each healthy customer waited (for the record). */
  const answeredAfter: Record<string, number> = {};
  for (;;) {
    const worker = await startWorkerProcess(h.env, h.queuePrefix, 0, { TEST_SCRIPT: 'poison' });
    children.push(worker);
    let exited = false;
    void worker.exited.then(() => (exited = true));
    await eventually(() => settled() || exited || undefined, 90_000);
    for (const customer of customers) if (received(customer).length > 0) answeredAfter[customer] ??= restarts;
    if (settled()) break;
    restarts += 1;
    if (restarts > CRASHING + 2) break;
  }

  // The measured count, for the record (test-artifacts/ is not committed).
  mkdirSync('test-artifacts/delivery', { recursive: true });
  writeFileSync(
    'test-artifacts/delivery/poison-crowd.json',
    JSON.stringify({ crashing: CRASHING, healthy: HEALTHY, restarts, answeredAfter, settled: settled() }),
  );
  expect(restarts).toBeLessThanOrEqual(CRASHING + 2);
  for (const customer of customers) expect(received(customer)).toEqual([expect.stringMatching(/^Slow answer to: what are your hours, \d\?$/)]);
  for (const attacker of attackers) expect(received(attacker)).toEqual([APOLOGY_TEXT]);
}, 600_000);
