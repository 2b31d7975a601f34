/**
 * A reply whose first send was refused transiently is delivered by a retried attempt, which
 * resumes from the stored parts instead of running the turn again. What follows a delivered
 * reply — the role's evidence facts, `afterTurn`, the KPI line, the turn's metering — must
 * still happen, exactly once, although the attempt that delivered it never ran the model.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';
import { transcriptModels } from '../../src/store/transcript-store.js';

const script = ({ userText }: { userText: string }) => ({ text: `Answer to: ${userText}` });

describe('a reply delivered by a retried attempt', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ script, env: { MESSAGE_RETRY_BACKOFF_MS: '100' } });
  });
  afterAll(() => harness.close());

  test('still gets its post-turn step, once', async () => {
    const customer = 'whatsapp:+447700906001';
    const messageSid = newMessageSid();
    harness.twilio.failNext(1, 500);
    await harness.sendWhatsapp({ from: customer, body: 'hello there', messageSid });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: hello there') || undefined, 15_000);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'reply-resumed', messageId: messageSid }));
    // A later message is answered after this one's post-turn step (the conversation is serialised).
    await harness.sendWhatsapp({ from: customer, body: 'second' });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: second') || undefined, 15_000);
    await eventually(() => (harness.logs.filter((line) => line.event === 'turn-kpi').length >= 2 ? true : undefined), 15_000);
    const kpis = harness.logs.filter((line) => line.event === 'turn-kpi');
    expect(kpis).toHaveLength(2);
    expect(kpis.every((line) => line.delivered === true)).toBe(true);
  }, 30_000);

  test('a turn whose history write failed after its reply went out: the post-turn step runs once, as delivered, and nothing is sent again', async () => {
    const customer = 'whatsapp:+447700906003';
    const { transcripts } = harness.services;
    const saveRecent = transcripts.saveRecent.bind(transcripts);
    let refused = 0;
    transcripts.saveRecent = async (conversationId, recent, customerAt) => {
      if (refused === 0 && recent.some((entry) => entry.text === 'Answer to: history lost')) {
        refused += 1;
        // The reply is out before the history write fails (the two run side by side).
        await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: history lost') || undefined, 15_000);
        throw new Error('ECONNRESET: history write lost (test)');
      }
      return saveRecent(conversationId, recent, customerAt);
    };
    const before = harness.logs.filter((line) => line.event === 'turn-kpi').length;
    try {
      await harness.sendWhatsapp({ from: customer, body: 'history lost' });
      await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: history lost') || undefined, 15_000);
      // The retry (which resumes the sent reply) answers the next message only after it.
      await harness.sendWhatsapp({ from: customer, body: 'after it' });
      await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: after it') || undefined, 15_000);
      await eventually(() => (harness.logs.filter((line) => line.event === 'turn-kpi').length >= before + 2 ? true : undefined), 15_000);
    } finally {
      transcripts.saveRecent = saveRecent;
    }
    expect(refused).toBe(1);
    expect(harness.twilio.messages.filter((message) => message.body === 'Answer to: history lost')).toHaveLength(1);
    const kpis = harness.logs.filter((line) => line.event === 'turn-kpi').slice(before);
    expect(kpis).toHaveLength(2);
    expect(kpis.every((line) => line.delivered === true)).toBe(true);
  }, 30_000);

  test('a turn that sent its reply but could not record it: the retry records the reply as sent, and sends nothing again', async () => {
    const customer = 'whatsapp:+447700906002';
    const messageSid = newMessageSid();
    const { outbox } = harness.services;
    const append = outbox.append.bind(outbox);
    let refused = 0;
    // The turn's one outbox entry (its records gathered until the reply went out) is refused once.
    outbox.append = async (records) => {
      if (refused === 0 && records.some((record) => record.kind === 'delivery')) {
        refused += 1;
        throw new Error('outbox append refused (test)');
      }
      return append(records);
    };
    try {
      await harness.sendWhatsapp({ from: customer, body: 'record me', messageSid });
      await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: record me') || undefined, 15_000);
      await transcriptsWritten(harness.services);
    } finally {
      outbox.append = append;
    }
    expect(refused).toBe(1);
    expect(harness.twilio.messages.filter((message) => message.body === 'Answer to: record me')).toHaveLength(1);
    const sent = harness.twilio.messages.find((message) => message.body === 'Answer to: record me');
    const stored = await harness.services.transcripts.conversationMessages(conversationKeyFor(customer));
    expect(stored.map((message) => [message.direction, message.text, message.status])).toEqual([
      ['inbound', 'record me', 'received'],
      ['outbound', 'Answer to: record me', 'queued'],
    ]);
    expect(stored[1]?.channelMessageId).toBe(sent?.sid);
    const delivery = await transcriptModels(harness.services.mongo).deliveries.findById(sent?.sid).lean();
    expect(delivery?.messageId).toBe(stored[1]?._id);
  }, 30_000);

  test('the history write fails while the reply is being sent: the reply goes out once, and the retry stores the history the next turn reads', async () => {
    const customer = 'whatsapp:+447700906004';
    const messageSid = newMessageSid();
    const { transcripts } = harness.services;
    const saveRecent = transcripts.saveRecent.bind(transcripts);
    let refused = 0;
    // The turn writes its history (with the reply) while the reply's send is in flight: that write is refused once.
    transcripts.saveRecent = async (conversationId, recent, customerAt) => {
      if (refused === 0 && recent.some((message) => message.text === 'Answer to: remember me')) {
        refused += 1;
        throw new Error('history write refused (test)');
      }
      return saveRecent(conversationId, recent, customerAt);
    };
    // The send is still in flight when the history write fails (longer than the retry's backoff):
    // a retry started meanwhile would find the part claimed, not yet at Twilio, and send it again.
    harness.twilio.delayNext(600);
    try {
      await harness.sendWhatsapp({ from: customer, body: 'remember me', messageSid });
      await eventually(
        () => harness.logs.find((line) => line.event === 'inbound-acknowledged' && (line.messageIds as string[] | undefined)?.includes(messageSid)),
        15_000,
      );
    } finally {
      transcripts.saveRecent = saveRecent;
    }
    expect(refused).toBe(1);
    // The failed attempt ended only once its send had: the retry never raced a send in flight.
    const events = harness.logs.filter((line) => line.messageId === messageSid).map((line) => line.event);
    expect(events.indexOf('reply-sent')).toBeGreaterThanOrEqual(0);
    expect(events.indexOf('reply-sent')).toBeLessThan(events.indexOf('inbound-retrying'));
    await harness.sendWhatsapp({ from: customer, body: 'and now?' });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: and now?') || undefined, 15_000);

    // The retry ran the turn again (no history said the reply was stored), and the stored, sent
    // reply won: sent once, although the attempt that sent it failed; the next turn saw it.
    expect(harness.twilio.messages.filter((message) => message.body === 'Answer to: remember me')).toHaveLength(1);
    const next = harness.models.replyCalls().filter((call) => call.userMessages.at(-1) === 'and now?');
    expect(next).toHaveLength(1);
    expect(next[0]!.promptText).toContain('Answer to: remember me');
    await transcriptsWritten(harness.services);
    const stored = await harness.services.transcripts.conversationMessages(conversationKeyFor(customer));
    expect(stored.map((message) => [message.direction, message.text])).toEqual([
      ['inbound', 'remember me'],
      ['outbound', 'Answer to: remember me'],
      ['inbound', 'and now?'],
      ['outbound', 'Answer to: and now?'],
    ]);
  }, 30_000);
});
