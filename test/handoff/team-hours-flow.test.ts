/**
 * A hand-off on WhatsApp while the team is closed, through the whole service: the hand-off and
 * its notices are recorded, the customer is told in their language when the team is back, the
 * webhook notice goes at once and the member's WhatsApp notice waits in the notices queue as a
 * delayed job until the opening. (The team opens only on the weekday three days from now, so the
 * test never runs while it is open.)
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Queue } from 'bullmq';
import type { Script, ScriptedCall } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const MEMBER = 'whatsapp:+34600915001';
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
const openDay = DAYS[(new Date().getUTCDay() + 3) % 7]!;

function toolOutput(call: ScriptedCall): { customerText?: string; nextSteps?: string; opensAt?: string } | undefined {
  const last = call.toolResults.at(-1)?.output as { value?: unknown } | undefined;
  if (!last) return undefined;
  const text = typeof last.value === 'string' ? last.value : JSON.stringify(last.value);
  return JSON.parse(text.replace(/^<tool-output>\n?|\n?<\/tool-output>$/g, '')) as { customerText?: string };
}

/** Hands off to support on "persona", in Spanish; then says what the tool told it to. */
const assistant: Script = (call) => {
  const output = toolOutput(call);
  if (output) return { text: output.customerText ?? 'Done.' };
  if (/persona/i.test(call.userText)) return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'No puede iniciar sesión', language: 'es' } }] };
  return { text: 'Hola' };
};

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let harness: Harness;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  harness = await startHarness({
    script: assistant,
    env: {
      NOTICE_BACKOFF_MS: '20',
      HANDOFF_TEAMS: JSON.stringify({
        support: {
          label: 'soporte',
          members: [{ name: 'Ana', whatsapp: MEMBER }],
          webhooks: [receiver.url('/support')],
          responseTime: 'within two hours',
          hours: { timeZone: 'UTC', weekly: { [openDay]: ['09:00-10:00'] } },
        },
      }),
    },
  });
});
afterAll(async () => {
  await harness.close();
  await receiver.close();
});

test('the customer is told when the team is back; the webhook goes now, the WhatsApp notice waits for the opening', async () => {
  const customer = 'whatsapp:+447700915001';
  await harness.sendWhatsapp({ from: customer, body: 'Quiero hablar con una persona' });
  const reply = await eventually(() => harness.twilio.messages.find((message) => message.to === customer));
  expect(reply.body).toMatch(/^Nuestro equipo \(soporte\) vuelve el \S+ a las 9:00 \(UTC\) y le responderá aquí entonces\./);

  await eventually(() => (receiver.received.length > 0 ? true : undefined));
  expect(JSON.stringify(receiver.received[0]?.body)).toContain('Out of hours: the customer was told you are back');
  const [handoff] = await harness.services.handoffs.list({ limit: 1 });
  expect(handoff?.status).toBe('open');
  const queue = new Queue('handoff-notices', { connection: { url: harness.config.redisUrl }, prefix: harness.queuePrefix });
  await eventually(async () => ((await queue.getDelayedCount()) === 1 ? true : undefined));
  const [held] = await queue.getDelayed();
  await queue.close();
  expect(held?.data).toMatchObject({ handoffId: handoff?._id, destinationId: MEMBER });
  expect(harness.twilio.messages.filter((message) => message.to === MEMBER)).toHaveLength(0);
  expect(handoff?.notices.find((notice) => notice.destination.id === MEMBER)?.status).toBe('pending');
});
