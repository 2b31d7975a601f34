/**
 * A hand-off on WhatsApp while the team is closed, through the whole service: the hand-off and
 * its notices are recorded, the customer is told by the service itself, in their language and
 * with the team's name in it, when the team is back (the model here ignores the sentence), the
 * webhook notice goes at once and the member's WhatsApp notice waits in the notices queue as a
 * delayed job until the opening. (The team opens only on the weekday three days from now, so the
 * test never runs while it is open.)
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Queue } from 'bullmq';
import { createHandoffStore } from '../../src/handoff/handoff-store.js';
import type { Script, ScriptedCall } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const MEMBER = 'whatsapp:+34600915001';
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
const openDay = DAYS[(new Date().getUTCDay() + 3) % 7]!;

function toolOutput(call: ScriptedCall): { customerText?: string; nextSteps?: string; opensAt?: string; status?: string } | undefined {
  const last = call.toolResults.at(-1)?.output as { value?: unknown } | undefined;
  if (!last) return undefined;
  const text = typeof last.value === 'string' ? last.value : JSON.stringify(last.value);
  return JSON.parse(text.replace(/^<tool-output>\n?|\n?<\/tool-output>$/g, '')) as { customerText?: string };
}

const told: string[] = [];

/**
 * Hands off to support on "persona", in Spanish, then says something of its own, never the
 * hours; on "person", in English, then repeats the sentence the service said it sent.
 */
const assistant: Script = (call) => {
  const output = toolOutput(call);
  if (output) {
    told.push(output.nextSteps ?? '');
    if (/person\b/.test(call.userText)) return { text: `Done. ${/"(Our .*)"/.exec(output.nextSteps ?? '')?.[1] ?? ''}` };
    return { text: 'He pasado su caso al equipo.' };
  }
  if (/persona/i.test(call.userText)) return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'No puede iniciar sesión', language: 'es' } }] };
  if (/person\b/.test(call.userText)) return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Cannot log in', language: 'en' } }] };
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
  const hours = /Nuestro equipo de soporte vuelve el \S+ a las 9:00 \(UTC\) y le responderá aquí entonces\./g;
  await eventually(() => harness.twilio.messages.find((message) => message.to === customer && /Nuestro/.test(message.body)));
  const said = harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  expect(said.join('\n')).toContain('He pasado su caso al equipo.');
  expect(said.join('\n').match(hours)).toHaveLength(1);
  // The model was told the service sent it, not asked to say it.
  expect(told[0]).toMatch(
    /^The soporte is closed right now.*The service sends the customer this message itself, with your reply: "Nuestro equipo de soporte vuelve/,
  );

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

test('a model that repeats the sentence does not make the customer read it twice', async () => {
  const customer = 'whatsapp:+447700915002';
  await harness.sendWhatsapp({ from: customer, body: 'I want a person' });
  await eventually(() => harness.twilio.messages.find((message) => message.to === customer));
  const said = harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  expect(said.join('\n').match(/Our soporte is back/g)).toHaveLength(1);
  expect(said.join('\n')).toMatch(/^Done\. Our soporte is back \S+ at 09:00 \(UTC\) and will answer here then\./);
});

describe('a notice held for the opening ends with its hand-off', () => {
  const ANA = { id: `page:Ana`, name: 'Ana', via: 'page' as const };
  const queue = () => new Queue('handoff-notices', { connection: { url: harness.config.redisUrl }, prefix: harness.queuePrefix });

  /** A Spanish customer's hand-off, once its WhatsApp notice waits as a delayed job. */
  async function heldHandoff(customer: string) {
    await harness.sendWhatsapp({ from: customer, body: 'Quiero hablar con una persona' });
    const handoff = await eventually(async () =>
      (await harness.services.handoffs.list({ limit: 20 })).find((candidate) => candidate.customer.address === customer),
    );
    const notices = queue();
    await eventually(async () => (await notices.getDelayed()).find((job) => job.data.handoffId === handoff._id));
    await notices.close();
    return { handoff };
  }

  const memberNotice = async (handoffId: string) => (await harness.services.handoffs.notice(handoffId, MEMBER))?.status;

  test.each([
    ['closed', async (id: string) => void (await harness.services.takeover.close({ handoffId: id, by: ANA, reason: 'page' }))],
    ['taken', async (id: string) => void (await harness.services.takeover.takeOver({ handoffId: id, by: ANA }))],
    [
      'taken and handed back',
      async (id: string) => {
        await harness.services.takeover.takeOver({ handoffId: id, by: ANA });
        await harness.services.takeover.handBack({ handoffId: id, by: ANA, reason: 'page' });
      },
    ],
  ])('%s: the held notice is withdrawn and its delayed job removed', async (how, end) => {
    const customer = `whatsapp:+44770091510${how.length}`;
    const { handoff } = await heldHandoff(customer);
    await end(handoff._id);
    expect(await memberNotice(handoff._id)).toBe('withdrawn');
    const notices = queue();
    expect((await notices.getDelayed()).filter((job) => job.data.handoffId === handoff._id)).toHaveLength(0);
    await notices.close();
  });

  test('a held job that fires after its hand-off ended sends nothing', async () => {
    const customer = 'whatsapp:+447700915199';
    const { handoff } = await heldHandoff(customer);
    const notices = queue();
    const held = await notices.getJob(`${handoff._id}_${MEMBER.replace(':', '_')}`);
    // Ended behind the settling's back (as a process dying between the end and the withdrawal would leave it).
    const raw = createHandoffStore(harness.services.mongo);
    await raw.close(handoff._id, ANA, 'page');
    expect(await memberNotice(handoff._id)).toBe('pending');
    await held?.promote();
    await eventually(async () => ((await memberNotice(handoff._id)) === 'withdrawn' ? true : undefined));
    await eventually(async () => ((await held?.getState()) === 'completed' ? true : undefined));
    await notices.close();
    expect(harness.twilio.messages.filter((message) => message.to === MEMBER && message.body.startsWith('New hand-off'))).toHaveLength(0);
  });
});
