/**
 * An escalation entry naming a team hands the conversation over when the judge's one call says
 * it applies: on WhatsApp (signed webhook → worker → orchestrator → hand-off → fake Twilio and
 * the team's webhook), the support team gets the hand-off notice with the entry's words as its
 * reason, the reply says so, and the reply's transcript names the entry as applied. A message
 * the entry does not apply to hands nothing over.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { schemaDefault, type Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const CUSTOMER = 'whatsapp:+447700908001';
const SUPPORT_PHONE = 'whatsapp:+34600000302';
const ADMIN_TOKEN = 'admin-token-for-the-escalation-suite';
const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };

/** Routes to support; the chargeback entry applies to a message about a chargeback. */
const judge: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  if ('route' in json) json.route = 'support';
  if ('inScope' in json) json.inScope = true;
  if ('guidance' in json) {
    const ids = [...call.system.matchAll(/^- (g_[0-9a-f]{12}) \(to support\): .*chargeback/gim)].map((match) => match[1]);
    json.guidance = /chargeback/i.test(call.userText) ? ids : [];
  }
  return { text: JSON.stringify(json) };
};

/** The reply model repeats what the service told it happened, and never calls a tool itself. */
const assistant: Script = ({ system }) => {
  const note = /As the business's guidance asks, the service has handed this conversation to the (\w+) team/.exec(system);
  return { text: note ? `Handed to ${note[1]}.` : 'Happy to help.' };
};

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let harness: Harness;
let entryId = '';
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  const teams = JSON.stringify({
    sales: { label: 'Sales team', whatsapp: ['whatsapp:+34600000301'] },
    support: { label: 'Support team', whatsapp: [SUPPORT_PHONE], webhooks: [receiver.url('/support')], responseTime: 'within two hours' },
  });
  harness = await startHarness({ script: assistant, env: { HANDOFF_TEAMS: teams, ADMIN_TOKEN, NOTICE_ATTEMPTS: '3', NOTICE_BACKOFF_MS: '20' } });
  harness.models.setJudge(judge);
  const added = await harness.http
    .post('/admin/guidance/entries')
    .set(auth)
    .send({ category: 'escalation', text: 'A chargeback always goes to a person in support.', team: 'support' });
  expect(added.status).toBe(201);
  entryId = (added.body as { id: string }).id;
  expect((await harness.http.post('/admin/guidance/publish').set(auth)).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await harness?.close();
  await receiver?.close();
});

const toCustomer = () => harness.twilio.messages.filter((message) => message.to === CUSTOMER);

describe('an escalation entry naming a team', () => {
  test('does nothing where the judge says it does not apply', async () => {
    await harness.sendWhatsapp({ from: CUSTOMER, body: 'What are your opening hours?' });
    await eventually(() => toCustomer().length === 1 || undefined);
    expect(toCustomer()[0]?.body).toBe('Happy to help.');
    expect(receiver.received).toEqual([]);
  });

  test('hands the conversation to its team when the judge says it applies, in the same one judge call', async () => {
    const judgeCalls = harness.models.calls.filter((call) => call.structured).length;
    await harness.sendWhatsapp({ from: CUSTOMER, body: 'I have opened a chargeback with my bank about order 5001' });
    await eventually(() => (toCustomer().length === 2 && receiver.received.length === 1) || undefined);
    expect(toCustomer()[1]?.body).toBe('Handed to support.');
    expect(harness.models.calls.filter((call) => call.structured).length - judgeCalls).toBe(1);
    const notice = JSON.stringify(receiver.received[0]?.body);
    expect(receiver.received[0]?.path).toBe('/support');
    expect(notice).toContain("The business's guidance: A chargeback always goes to a person in support.");
    const stored = await eventually(async () => {
      const found = await harness.services.mongo.collection('messages').find({ direction: 'outbound', text: 'Handed to support.' }).toArray();
      return found[0];
    });
    expect(stored.guidance).toMatchObject({ applied: [entryId] });
    expect(harness.services.metrics.value('guidance_handovers_total', { team: 'support', outcome: 'handed_off' })).toBe(1);
  });
});
