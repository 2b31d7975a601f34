/**
 * A model outage and the widget's history: what the visitor sent and everything the service
 * said — the holding message while it waits, the apology once it gives up — is there after a
 * reload, in order, and the apology offers to try the message again. None of it reaches the
 * model once it is back: the next turn reads only what was answered.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { HOLDING_NOTICE_TEXT } from '../../src/turn/holding-notice.js';
import { eventually, PUBLIC_BASE_URL, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';

const HOLDING = HOLDING_NOTICE_TEXT;

let harness: Harness;
let modelDown = true;

beforeAll(async () => {
  harness = await startHarness({
    env: { MODEL_HOLDING_NOTICE_MS: '300', MESSAGE_RETRY_BUDGET_MS: '2500', MESSAGE_RETRY_BACKOFF_MS: '200' },
    script: ({ userText }) => (modelDown ? { error: new Error('upstream 503') } : { text: `Answer to: ${userText}` }),
  });
});
afterAll(() => harness.close());

interface Shown {
  id: string;
  role: string;
  text: string;
  failed?: boolean;
  replyTo?: string;
}

test('the visitor’s message, the holding message and the apology are in the history after a reload; the model never reads them', async () => {
  const session = await harness.http.post('/api/widget/session').set('Origin', PUBLIC_BASE_URL).send({ siteKey: 'demo' });
  const { token } = session.body as { token: string };
  const post = (clientMessageId: string, text: string) =>
    harness.http.post('/api/widget/messages').set('Origin', PUBLIC_BASE_URL).set('Authorization', `Bearer ${token}`).send({ clientMessageId, text });
  const history = async (): Promise<Shown[]> => {
    const response = await harness.http.get('/api/widget/history').set('Origin', PUBLIC_BASE_URL).set('Authorization', `Bearer ${token}`);
    expect(response.status).toBe(200);
    return (response.body.messages as Shown[]).map(({ id, role, text, failed, replyTo }) => ({ id, role, text, ...(failed ? { failed, replyTo } : {}) }));
  };
  /** The history once it shows `count` messages (read a few times a second: the widget's requests are rate limited). */
  const historyOf = (count: number) =>
    eventually(async () => {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const shown = await history();
      return shown.length === count ? shown : undefined;
    }, 20_000);

  expect((await post('outage-0001', 'Where is my parcel?')).status).toBe(202);
  // While the service waits for the model: the message and the holding message.
  const waiting = await historyOf(2);
  expect(waiting.map(({ role, text }) => ({ role, text }))).toEqual([
    { role: 'visitor', text: 'Where is my parcel?' },
    { role: 'assistant', text: HOLDING },
  ]);

  // Given up on: the apology joins them, offering to try the message again.
  const given = await historyOf(3);
  await turnsSettled(harness.services);
  expect(given.slice(0, 2)).toEqual(waiting);
  expect(given[2]).toMatchObject({ role: 'assistant', failed: true, replyTo: 'outage-0001' });
  expect(given[2]?.text).toMatch(/^Sorry/);

  // The model is back: the next message is answered, and the model never read the outage's messages.
  modelDown = false;
  expect((await post('outage-0002', 'Hello again')).status).toBe(202);
  const after = await historyOf(5);
  expect(after.slice(0, 3)).toEqual(given);
  expect(after.slice(3).map(({ role, text }) => ({ role, text }))).toEqual([
    { role: 'visitor', text: 'Hello again' },
    { role: 'assistant', text: 'Answer to: Hello again' },
  ]);
  const answered = harness.models.calls.filter((call) => !call.structured).at(-1);
  expect(answered?.promptText).not.toContain('Where is my parcel?');
  expect(answered?.promptText).not.toContain(HOLDING);
}, 60_000);
