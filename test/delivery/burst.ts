/**
 * Shared by the delivery fault tests: a burst of WhatsApp messages from several numbers, sent
 * like Twilio does (each number in order, numbers at once, a webhook retried until it is
 * acknowledged), the count of what each customer received at the fake Twilio, and the figures
 * each scenario records under test-artifacts/delivery/ for the closing note.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { newMessageSid, type FakeTwilio, type Harness } from '../support/harness.js';

export interface BurstMessage {
  from: string;
  body: string;
}

export function burstMessages(numbers: number, perNumber: number, prefix: string): BurstMessage[][] {
  return Array.from({ length: numbers }, (_, number) => {
    const from = `whatsapp:+44770090${prefix}${String(number).padStart(2, '0')}`;
    return Array.from({ length: perNumber }, (_message, index) => ({ from, body: `${from.slice(-4)} message ${index}` }));
  });
}

/** Sends every number's messages in order, numbers concurrently; retries a webhook until 200. */
export async function sendBurst(harness: Harness, burst: BurstMessage[][], pauseMs = 0): Promise<void> {
  await Promise.all(
    burst.map(async (messages) => {
      for (const message of messages) {
        const messageSid = newMessageSid();
        for (let attempt = 0; ; attempt += 1) {
          const response = await harness.sendWhatsapp({ ...message, messageSid }).catch(() => undefined);
          if (response?.status === 200) break;
          if (attempt > 50) throw new Error(`webhook for ${message.body} never acknowledged`);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        if (pauseMs) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    }),
  );
}

export interface DeliveryCount {
  expected: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  /** Date.now() of the last reply the fake Twilio accepted. */
  lastReplyAt: number;
}

/** What the customers received: per number, the answers to their messages, once each and in order. */
export function countDeliveries(twilio: FakeTwilio, burst: BurstMessage[][], answer: (body: string) => string): DeliveryCount {
  let lost = 0;
  let duplicated = 0;
  let outOfOrder = 0;
  for (const messages of burst) {
    const received = twilio.messages.filter((message) => message.to === messages[0]!.from).map((message) => message.body);
    const expected = messages.map((message) => answer(message.body));
    lost += expected.filter((body) => !received.includes(body)).length;
    duplicated += received.length - new Set(received).size;
    const firsts = expected.filter((body) => received.includes(body)).map((body) => received.indexOf(body));
    outOfOrder += firsts.filter((position, index) => index > 0 && position < firsts[index - 1]!).length;
  }
  const lastReplyAt = Math.max(0, ...twilio.messages.map((message) => message.receivedAt));
  return { expected: burst.flat().length, lost, duplicated, outOfOrder, lastReplyAt };
}

/** Records a scenario's figures (test-artifacts/ is not committed; the lead copies them into the closing note). */
export async function recordFigures(scenario: string, figures: Record<string, unknown>): Promise<void> {
  await mkdir('test-artifacts/delivery', { recursive: true });
  await writeFile(`test-artifacts/delivery/${scenario}.json`, `${JSON.stringify({ scenario, ...figures, at: new Date().toISOString() }, null, 2)}\n`);
}
