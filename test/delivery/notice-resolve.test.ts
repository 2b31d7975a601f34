/**
 * A hand-off notice follows the reply rules: a worker killed while Twilio holds the notice's
 * send leaves it `sending`; the next worker looks it up at Twilio and marks it sent if Twilio
 * had it, or sends it if not — the sales team gets it exactly once either way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, jest, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { recordFigures } from './burst.js';
import { RUN_TS } from '../support/run-ts.js';

// A worker process starting under load (compiling the service from source) may take most of a minute.
jest.setTimeout(120_000);

const SALES_PHONE = 'whatsapp:+34600000909';

let child: ChildProcess | undefined;
let harness: Harness | undefined;
afterEach(async () => {
  child?.kill('SIGKILL');
  await harness?.close();
  child = undefined;
  harness = undefined;
});

describe.each([
  ['had accepted it', true, 'found'],
  ['had not accepted it', false, 'resent'],
])('a worker killed while sending a hand-off notice (Twilio %s)', (label, accepted, outcome) => {
  test('the team member gets the notice exactly once', async () => {
    harness = await startHarness({
      worker: false,
      env: {
        HANDOFF_TEAMS: JSON.stringify({ sales: { label: 'Sales team', whatsapp: [SALES_PHONE] }, support: { label: 'Support team' } }),
        NOTICE_BACKOFF_MS: '100',
      },
      script: () => ({ text: 'The sales team will be in touch.' }),
    });
    child = spawn(process.execPath, [...RUN_TS, 'test/support/worker-process.ts'], {
      env: { ...process.env, ...harness.env, TEST_QUEUE_PREFIX: harness.queuePrefix, TEST_MODEL_DELAY_MS: '0', TEST_SCRIPT: 'handoff' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await eventually(() => output.includes('worker-ready'), 45_000);

    const held = harness.twilio.holdNext({ accepted, to: SALES_PHONE });
    await harness.sendWhatsapp({ from: 'whatsapp:+447700906101', body: 'A demo for our team of 12, please' });
    const request = await held;
    const [handoff] = await harness.services.handoffs.list({ limit: 1 });
    expect(handoff?.notices.map((notice) => notice.status)).toEqual(['sending']);
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    request.release();

    await harness.services.startWorker().waitUntilReady();
    const notice = await eventually(async () => {
      const [latest] = await harness!.services.handoffs.list({ limit: 1 });
      return latest?.notices[0]?.status === 'sent' ? latest.notices[0] : undefined;
    }, 20_000);
    const resolvedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const received = harness.twilio.messages.filter((message) => message.to === SALES_PHONE);
    expect(received).toHaveLength(1);
    expect(notice.channelMessageId).toBe(received[0]!.sid);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'handoff-notice-resolved', outcome }));
    await recordFigures(`notice-killed-${accepted ? 'accepted' : 'not-accepted'}`, {
      variant: `Twilio ${label}`,
      lost: 0,
      duplicated: received.length - 1,
      resolution: outcome,
      recoverMs: resolvedAt - killedAt,
    });
  }, 90_000);
});
