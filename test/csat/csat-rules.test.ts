/**
 * When the satisfaction question is (not) asked, on the real Redis with a clock the test
 * controls and a channel that records what it sends: once within the cooldown, never while a
 * teammate holds the conversation or a hand-off waits, never outside WhatsApp's 24-hour window,
 * never after an apology, never when the customer wrote after the reply it follows; and how its
 * answers are taken (a tap of this question, a typed 1–5; the words after it left to the turn's
 * judge, which says whether they are a comment).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import type { ChannelDefinition, InboundMessage, SendOptions, TurnResult } from '../../src/contracts/index.js';
import { createCsat } from '../../src/csat/csat.js';
import { createCsatState } from '../../src/csat/csat-state.js';
import { createCsatTranscript } from '../../src/csat/csat-transcript.js';
import { createTranscriptOutbox } from '../../src/store/outbox.js';
import { createTranscriptStore } from '../../src/store/transcript-store.js';
import { redisKeys } from '../../src/queue/keys.js';
import type { CsatStore } from '../../src/csat/csat-store.js';
import type { GiveUpHandler } from '../../src/queue/turn-worker.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';

const DAY = 24 * 60 * 60 * 1000;
let redis: Redis;
beforeAll(() => {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('global-setup did not publish TEST_REDIS_URL');
  redis = new Redis(url, { maxRetriesPerRequest: 2 });
});
afterAll(async () => {
  await redis.quit();
});

function rig(options: { held?: boolean; handoffOpen?: boolean; windowMs?: number; mongoDown?: boolean } = {}) {
  let time = Date.parse('2026-05-04T10:00:00Z');
  const clock = () => time;
  const sent: { text: string; options?: SendOptions | undefined }[] = [];
  const channel = {
    id: 'whatsapp',
    transport: {
      freeformWindowMs: options.windowMs ?? DAY,
      send: async (_inbound: InboundMessage, text: string, _part: number, extra?: SendOptions) => {
        sent.push({ text, options: extra });
        return { channelMessageId: randomUUID(), status: 'sent' as const };
      },
    },
  } as unknown as ChannelDefinition;
  const records: Record<string, unknown>[] = [];
  const store = {
    asked: async (conversationId: string, pending: { id: string }) => void records.push({ op: 'asked', conversationId, id: pending.id }),
    answered: async (conversationId: string, rated: { score?: number; answeredVia?: string }) => {
      if (options.mongoDown) throw new Error('MongoDB unreachable');
      records.push({ op: 'answered', conversationId, score: rated.score, via: rated.answeredVia });
    },
    commented: async (conversationId: string, rated: { score?: number }, comment: string) =>
      void records.push({ op: 'commented', conversationId, comment, ...(options.mongoDown ? { score: rated.score } : {}) }),
  } as unknown as CsatStore;
  const scheduled: { key: string; at: number; delayMs: number }[] = [];
  /** Runs while the question's last check is made (the customer writing at that very moment). */
  const checking: { meanwhile?: () => Promise<unknown> } = {};
  const logger = createLogger({ level: 'error', sink: () => undefined });
  // The real transcript store on the real Redis (its outbox is never drained here: no MongoDB).
  const outbox = createTranscriptOutbox({ redis, maxBacklog: 10_000, database: 'csat-rules', logger, metrics: createMetrics() });
  const transcripts = createTranscriptStore(mongoose.createConnection(), { redis, outbox, clock });
  const csat = createCsat({
    afterMs: 30 * 60_000,
    cooldownMs: DAY,
    commentMs: 15 * 60_000,
    state: createCsatState(redis, transcripts),
    store,
    transcript: createCsatTranscript(transcripts),
    channels: new Map([['whatsapp', channel]]),
    heldByTeammate: async () => options.held === true,
    handoffOpen: async () => options.handoffOpen === true,
    handoffRole: async () => 'support',
    questionWaiting: async () => (await checking.meanwhile?.(), false),
    scheduleQuiet: async (key, at, delayMs) => void scheduled.push({ key, at, delayMs }),
    logger,
    metrics: createMetrics(),
    now: clock,
  });
  const key = `whatsapp:+4477009${Math.floor(Math.random() * 1e6)}`;
  const hook = csat.hook(async () => false);
  const message = (text: string, choice?: string): InboundMessage => ({
    channel: 'whatsapp',
    conversationKey: key,
    messageId: `SM${randomUUID()}`,
    from: { address: key },
    text,
    receivedAt: clock(),
    metadata: choice ? { choice } : {},
  });
  const inbox = redisKeys.inbox(key);
  /** The customer's messages whose turn is still to answer them (in the inbox, as the intake put them). */
  const waiting: InboundMessage[] = [];
  /**
   * The customer writes: the message joins the inbox, and its turn begins as the worker's does (the
   * conversation opened while the hook decides). True when the CSAT hook took it (no turn: acknowledged).
   */
  const write = async (text: string, choice?: string) => {
    const written = message(text, choice);
    await redis.rpush(inbox, written.messageId);
    const opening = transcripts.openConversation({ key, channel: 'whatsapp', address: key });
    const taken = await hook([written], channel, createLogger({ level: 'error', sink: () => undefined }));
    await opening;
    if (taken) await redis.lrem(inbox, 0, written.messageId);
    else waiting.push(written);
    return taken;
  };
  /** The assistant answered the waiting messages (its history saved, the inbox acknowledged): its quiet check's time, if it queued one. */
  const noteReply = async () => {
    const answered = waiting.splice(0);
    const { recent } = await transcripts.openConversation({ key, channel: 'whatsapp', address: key });
    const entries = answered.flatMap((inbound) => [
      { id: `in:whatsapp:${inbound.messageId}`, direction: 'inbound' as const, text: inbound.text },
      { id: `out:whatsapp:${inbound.messageId}#0`, direction: 'outbound' as const, text: `Answer to ${inbound.text}` },
    ]);
    await transcripts.saveRecent(key, [...recent, ...entries], answered.at(-1)?.receivedAt);
    const count = scheduled.length;
    await csat.noteTurn({ roleId: 'sales', failed: false, postTurn: { conversationId: key } } as unknown as TurnResult);
    await redis.del(inbox);
    return scheduled.length === count ? undefined : scheduled.at(-1)!.at;
  };
  /** The assistant answered: its quiet check is queued for `at`. */
  const replied = async () => (await noteReply()) ?? scheduled.at(-1)!.at;
  return {
    csat,
    key,
    transcripts,
    sent,
    records,
    scheduled,
    write,
    replied,
    noteReply,
    message,
    advance: (ms: number) => void (time += ms),
    checking,
    quiet: (at: number) => csat.ask(key, { trigger: 'quiet', at }),
  };
}

test('asked once after the quiet period: a tap rates, the next message comments, and none of it is a turn', async () => {
  const r = rig();
  expect(await r.write('What are your opening hours?')).toBe(false);
  const at = await r.replied();
  expect(r.scheduled.at(-1)).toMatchObject({ key: r.key, delayMs: 30 * 60_000 });
  r.advance(30 * 60_000);
  expect(await r.quiet(at)).toBe(true);
  const [question] = r.sent;
  expect(question?.text).toContain('How did we do?');
  expect(question?.text).toContain('5. ⭐⭐⭐⭐⭐ Excellent');
  expect(question?.options?.choices?.map((choice) => choice.label)).toEqual([
    '⭐ Very poor',
    '⭐⭐ Poor',
    '⭐⭐⭐ Okay',
    '⭐⭐⭐⭐ Good',
    '⭐⭐⭐⭐⭐ Excellent',
  ]);

  const four = question!.options!.choices![3]!;
  expect(await r.write(four.label, four.id)).toBe(true);
  expect(r.sent.at(-1)?.text).toMatch(/^Thank you! Anything/);
  // Words after the rating are the turn's: its judge reads them as a comment (`feedback`), thanked in the service's words.
  expect(await r.write('Quick and clear')).toBe(false);
  expect(await r.csat.feedback.awaiting(r.key)).toBe(true);
  expect(await r.csat.feedback.comment({ conversationId: r.key, channel: 'whatsapp', text: 'Quick and clear' })).toBe('Thank you for your feedback!');
  expect(await r.csat.feedback.awaiting(r.key)).toBe(false);
  expect(r.records.map(({ op, score, via, comment }) => ({ op, score, via, comment }))).toEqual([
    { op: 'asked', score: undefined, via: undefined, comment: undefined },
    { op: 'answered', score: 4, via: 'tap', comment: undefined },
    { op: 'commented', score: undefined, via: undefined, comment: 'Quick and clear' },
  ]);
  // Done: the next message is the assistant's again, and a second quiet period asks nothing (cooldown):
  // its reply's quiet check would come within the cooldown, so none is queued (nor the reply noted).
  expect(await r.write('And on Sundays?')).toBe(false);
  expect(await r.noteReply()).toBeUndefined();
  // After the cooldown, a new exchange may be asked again.
  r.advance(DAY);
  expect(await r.write('Back again')).toBe(false);
  const again = await r.replied();
  r.advance(30 * 60_000);
  expect(await r.quiet(again)).toBe(true);
});

test('a typed score works; a question after it is not a comment but a turn', async () => {
  const r = rig();
  await r.write('hi');
  const at = await r.replied();
  r.advance(31 * 60_000);
  await r.quiet(at);
  expect(await r.write(' 5 ')).toBe(true);
  // A question: the turn's judge says so, and the comment stops waiting.
  expect(await r.write('How do I reset my password?')).toBe(false);
  await r.csat.feedback.moveOn(r.key);
  expect(await r.csat.feedback.awaiting(r.key)).toBe(false);
  expect(r.records.filter((record) => record.op !== 'asked')).toEqual([{ op: 'answered', conversationId: r.key, score: 5, via: 'typed' }]);
  // The question stopped waiting: a later "3" is an ordinary message.
  expect(await r.write('3')).toBe(false);
});

test('a message other than an answer ends the wait; a stale tap is never a turn', async () => {
  const r = rig();
  await r.write('hi');
  const at = await r.replied();
  r.advance(31 * 60_000);
  await r.quiet(at);
  const tapId = r.sent[0]!.options!.choices![0]!.id;
  expect(await r.write('Actually, what does shipping cost?')).toBe(false);
  // The tap on the question that no longer waits: taken (no turn), not recorded.
  expect(await r.write('⭐ Very poor', tapId)).toBe(true);
  expect(r.records.filter((record) => record.op !== 'asked')).toEqual([]);
});

test('not asked: the customer wrote since, a teammate holds it, a hand-off waits, the window closed, an apology ended it', async () => {
  const wroteSince = rig();
  await wroteSince.write('hi');
  const at = await wroteSince.replied();
  wroteSince.advance(60_000);
  await wroteSince.write('one more thing');
  wroteSince.advance(30 * 60_000);
  expect(await wroteSince.quiet(at)).toBe(false);

  for (const options of [{ held: true }, { handoffOpen: true }, { windowMs: 20 * 60_000 }]) {
    const r = rig(options);
    await r.write('hi');
    const quietAt = await r.replied();
    r.advance(30 * 60_000);
    expect(await r.quiet(quietAt)).toBe(false);
    expect(r.sent).toEqual([]);
  }

  const apology = rig();
  await apology.write('hi');
  const replyAt = await apology.replied();
  const giveUp: GiveUpHandler = apology.csat.giveUp(async () => undefined);
  apology.advance(60_000);
  await giveUp({ message: apology.message('hello?'), earlier: [] }, { reason: 'budget', error: new Error('model down'), attempts: 3 }, () => undefined);
  apology.advance(30 * 60_000);
  expect(await apology.quiet(replyAt)).toBe(false);
});

test('not asked when the customer writes while the quiet check is being made', async () => {
  const r = rig();
  await r.write('hi');
  const at = await r.replied();
  r.advance(30 * 60_000);
  r.checking.meanwhile = async () => {
    r.checking.meanwhile = undefined;
    r.advance(1);
    await r.write('one more thing');
  };
  expect(await r.quiet(at)).toBe(false);
  expect(r.sent).toEqual([]);
});

test("a reply while the conversation's check is still to come queues none: the check finds it and comes again, asking after the last reply", async () => {
  const r = rig();
  await r.write('hi');
  const first = await r.replied();
  r.advance(10 * 60_000);
  await r.write('one more thing');
  // The check queued ten minutes ago is still to come: this reply queues nothing of its own.
  expect(await r.noteReply()).toBeUndefined();
  const second = first + 10 * 60_000;
  r.advance(20 * 60_000);
  // The first check comes: the history was written since (the second reply), so nothing is asked yet and it comes again after it.
  expect(await r.quiet(first)).toBe(false);
  expect(r.sent).toEqual([]);
  expect(r.scheduled.at(-1)).toMatchObject({ key: r.key, at: second });
  r.advance(10 * 60_000);
  expect(await r.quiet(second)).toBe(true);
  expect(r.sent).toHaveLength(1);
});

test('not asked while a message of the customer waits in the inbox, its turn not begun: the check comes again', async () => {
  const r = rig();
  await r.write('hi');
  const at = await r.replied();
  r.advance(30 * 60_000);
  // The intake put a message in the inbox; no worker has started its turn yet.
  await redis.rpush(redisKeys.inbox(r.key), 'SMwaiting');
  expect(await r.quiet(at)).toBe(false);
  expect(r.sent).toEqual([]);
  expect(r.scheduled.at(-1)!.at).toBeGreaterThan(at);
  await redis.del(redisKeys.inbox(r.key));
});

test("a conversation an earlier version noted in the question's own hash: its quiet check asks, in its language and for its role, and the rating is taken", async () => {
  const r = rig();
  const replyAt = Date.parse('2026-05-04T09:00:00Z');
  // What the earlier version kept: the conversation's hash without the question's fields, and all of them in the question's hash.
  await r.transcripts.openConversation({ key: r.key, channel: 'whatsapp', address: r.key });
  await redis.hset(`asst:tx:conv:{${r.key}}`, {
    recent: JSON.stringify([
      { id: 'in:whatsapp:SMold', direction: 'inbound', text: 'Hola' },
      { id: 'out:whatsapp:SMold#0', direction: 'outbound', text: '¡Hola!' },
    ]),
    customerAt: String(replyAt - 1000),
  });
  const seen = { channel: 'whatsapp', conversationKey: r.key, from: { address: r.key }, metadata: {} };
  await redis.hset(`asst:csat:{${r.key}}`, {
    seen: JSON.stringify(seen),
    inboundAt: String(replyAt - 1000),
    replyAt: String(replyAt),
    role: 'billing',
    language: 'es',
  });
  expect(await r.quiet(replyAt)).toBe(true);
  const question = r.sent[0]!;
  expect(question.text).toContain('¿Qué tal le hemos atendido?');
  const pending = JSON.parse((await redis.hget(`asst:csat:{${r.key}}`, 'pending')) ?? '{}') as Record<string, unknown>;
  expect(pending).toMatchObject({ roleId: 'billing', language: 'es', trigger: 'quiet' });
  const good = question.options!.choices![3]!;
  expect(await r.write(good.label, good.id)).toBe(true);
  expect(r.records.at(-1)).toMatchObject({ op: 'answered', score: 4, via: 'tap' });
});

test('after a hand-back: asked at once, with a person and the hand-off role, even before the quiet period', async () => {
  const r = rig();
  await r.write('I want a person');
  await r.replied();
  const entry: InboundMessage = {
    ...r.message(''),
    teammate: { action: 'handed_back', handoffId: 'ho_1', actor: { id: 'whatsapp:+34600000111', name: 'Ana', via: 'whatsapp' }, teamLabel: 'Support team' },
  };
  const hook = r.csat.hook(async () => true);
  expect(await hook([entry], { id: 'whatsapp' } as ChannelDefinition, createLogger({ level: 'error', sink: () => undefined }))).toBe(true);
  expect(r.sent).toHaveLength(1);
  expect(r.records[0]).toMatchObject({ op: 'asked', id: expect.stringContaining(r.key) });
  const pending = JSON.parse((await redis.hget(`asst:csat:{${r.key}}`, 'pending')) ?? '{}') as Record<string, unknown>;
  expect(pending).toMatchObject({ trigger: 'handed_back', withPerson: true, roleId: 'support', handoffId: 'ho_1' });
});

test('MongoDB failing on the rating: the customer is still thanked (no turn), and the comment carries the score', async () => {
  const r = rig({ mongoDown: true });
  await r.write('hi');
  const at = await r.replied();
  r.advance(31 * 60_000);
  await r.quiet(at);
  const two = r.sent[0]!.options!.choices![1]!;
  expect(await r.write(two.label, two.id)).toBe(true);
  expect(r.sent.at(-1)?.text).toMatch(/^Thank you! Anything/);
  expect(await r.write('Slow answers')).toBe(false);
  await r.csat.feedback.comment({ conversationId: r.key, channel: 'whatsapp', text: 'Slow answers' });
  expect(r.records.at(-1)).toMatchObject({ op: 'commented', comment: 'Slow answers', score: 2 });
});
