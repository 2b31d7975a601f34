/**
 * A suspect turn (a batch a worker died in) runs again in a child process that starts like any
 * worker: the child builds its knowledge index before it takes the batch, so a customer whose
 * question the business's FAQ answers gets that answer and its "Source:" line from the child as
 * from any worker — never a reply without the business's knowledge because the child was new.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
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

const ADMIN_TOKEN = 'suspect-knowledge-admin-token-0123456789';
const SOURCE_LINE = '\n\nSource: How long does delivery take? – https://help.example/shipping';

describe('a customer whose turn ran in a worker that crashed', () => {
  test('is answered from the business knowledge by the suspect child: the FAQ passage reaches the model, the reply ends with its "Source:" line', async () => {
    const h = await startHarness({ worker: false, env: { ADMIN_TOKEN, TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '200' } });
    harness = h;
    const added = await h.http
      .post('/admin/knowledge/faq')
      .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
      .send({
        entries: [{ question: 'How long does delivery take?', answer: 'Standard delivery takes 2 to 3 business days.', url: 'https://help.example/shipping' }],
      });
    expect(added.status).toBe(201);
    const start = async () => {
      // Every reply takes 3 s (the crash comes while it is written); a message with POISON aborts the process.
      const worker = await startWorkerProcess(h.env, h.queuePrefix, 3_000, { TEST_SCRIPT: 'poison' });
      children.push(worker);
      let exited = false;
      void worker.exited.then(() => (exited = true));
      return Object.assign(worker, { alive: () => !exited });
    };
    const received = (customer: string) => h.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
    const customer = 'whatsapp:+447700960051';
    const crasher = 'whatsapp:+447700960052';

    // The customer's turn is being written when a crashing message kills the worker.
    const first = await start();
    expect((await h.sendWhatsapp({ from: customer, body: 'how long does delivery take to Leeds?' })).status).toBe(200);
    await eventually(() => first.output().includes('model-called how long does delivery take to Leeds?') || undefined, 20_000);
    expect((await h.sendWhatsapp({ from: crasher, body: 'POISON please' })).status).toBe(200);
    await first.exited;
    expect(received(customer)).toEqual([]);

    // The next worker runs each batch in a child of its own: the crashing one kills its child and is
    // quarantined; the customer's child builds its index first and answers from the FAQ.
    const next = await start();
    await eventually(() => (received(customer).length > 0 && received(crasher).length > 0) || undefined, 60_000);
    expect(received(customer)).toEqual([`Slow answer to: how long does delivery take to Leeds?${SOURCE_LINE}`]);
    expect(received(crasher)).toEqual([APOLOGY_TEXT]);
    expect(next.alive()).toBe(true);
  }, 150_000);
});
