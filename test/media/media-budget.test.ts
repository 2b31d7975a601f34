/**
 * The worker's media budget (MEDIA_MAX_WORKER_BYTES), without storage: a turn whose photos and
 * PDFs do not fit beside the turns holding media waits, first come first served, until one ends;
 * a turn without media never waits; a waiting turn cut short gives its place up; the budget
 * reserved is the batch's stored sizes, at most MEDIA_MAX_TURN_BYTES.
 */
import { describe, expect, test } from '@jest/globals';
import type { InboundMessage } from '../../src/contracts/index.js';
import { createLogger } from '../../src/logger.js';
import { createMediaIntake } from '../../src/media/inbound-media.js';
import type { MediaStore } from '../../src/media/media-store.js';
import { createMetrics } from '../../src/metrics.js';

const logger = createLogger({ level: 'error', sink: () => undefined });
const intake = createMediaIntake({
  // Never read: these turns end before preparing any message.
  store: {} as MediaStore,
  sources: {},
  transcribe: async () => '',
  maxBytes: 100,
  maxTurnBytes: 100,
  maxWorkerBytes: 150,
  fetchTimeoutMs: 1_000,
  transcribeTimeoutMs: 1_000,
  logger,
  metrics: createMetrics(),
});

let count = 0;
function message(media: { contentType: string; size: number }[]): InboundMessage {
  count += 1;
  return {
    channel: 'web',
    conversationKey: `web:budget:${count}`,
    messageId: `m${count}`,
    from: { address: `web:budget:${count}` },
    text: 'see attached',
    receivedAt: Date.now(),
    metadata: {},
    media: media.map((item, index) => ({ id: `${String(count).padStart(12, '0')}${String(index).padStart(12, '0')}`, ...item })),
  };
}

const context = (signal = new AbortController().signal) => ({ conversationId: 'c', signal, logger });
const pdf = (size: number) => ({ contentType: 'application/pdf', size });
/** Whether a promise has settled, after the microtasks already queued ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let tick = 0; tick < 10; tick += 1) await Promise.resolve();
  return done;
}

describe('the worker media budget', () => {
  test('a turn that does not fit waits until a turn holding media ends; one without media never waits', async () => {
    const first = await intake.startTurn([message([pdf(80)])], context());
    const second = intake.startTurn([message([pdf(60), pdf(60)])], context());
    // 80 held, the second needs min(120, MEDIA_MAX_TURN_BYTES = 100): over 150.
    expect(await settled(second)).toBe(false);
    const textOnly = intake.startTurn([{ ...message([]), media: undefined }], context());
    expect(await settled(textOnly)).toBe(true);
    (await textOnly).end();
    expect(await settled(second)).toBe(false);
    first.end();
    expect(await settled(second)).toBe(true);
    (await second).end();
  });

  test('first come, first served; a waiting turn cut short gives its place up', async () => {
    const holder = await intake.startTurn([message([pdf(100)])], context());
    const aborted = new AbortController();
    const cut = intake.startTurn([message([pdf(100)])], context(aborted.signal));
    const next = intake.startTurn([message([pdf(50)])], context());
    // 50 would fit beside the holder, but a turn that came earlier waits: it waits too.
    expect(await settled(next)).toBe(false);
    aborted.abort(new Error('lost the lock'));
    await expect(cut).rejects.toThrow('lost the lock');
    expect(await settled(next)).toBe(true);
    (await next).end();
    holder.end();
    // Everything given back: a whole turn's worth fits again at once.
    const again = intake.startTurn([message([pdf(100)])], context());
    expect(await settled(again)).toBe(true);
    (await again).end();
  });
});
