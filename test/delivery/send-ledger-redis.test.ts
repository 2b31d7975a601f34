/**
 * What a reply's send ledger costs in Redis and how its delivery statuses find it, end to end:
 * a customer's WhatsApp message answered through the twilio library and the fake Twilio API,
 * Redis's MONITOR filtered to this suite's own reply (other suites share the server). Storing
 * the reply is one script (its turn payload inside the last part's entry), marking it sent one
 * more (taking the payload in the same rewrite of the entry): nothing else, no key per delivery
 * id. Twilio's status callbacks go to the URL the part was sent with, which names the part and
 * is signed with it; a callback of a part an earlier version sent (naming none) still finds it.
 * A part whose send outcome was lost is looked up at Twilio without taking another part's send
 * of the same words for its own.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Redis } from 'ioredis';
import { sendPartOnce } from '../../src/store/part-ledger.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';
import { outboundMessageId } from '../../src/store/transcript-store.js';
import { eventually, newMessageSid, PUBLIC_BASE_URL, startHarness, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, type Harness } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';
import { transcriptsWritten } from '../support/settled.js';
import { signTwilioRequest, statusCallbackParams } from '../support/twilio-signature.js';

let harness: Harness;
let monitor: Redis | undefined;
beforeAll(async () => {
  harness = await startHarness({ script: ({ userText }) => ({ text: `Noted: ${userText}` }) });
});
afterAll(async () => {
  monitor?.disconnect();
  await harness.close();
});

const STATUS_ROUTE = `${PUBLIC_BASE_URL}/webhooks/whatsapp/status`;

/** The ledger key a sent message's status callback URL names. */
function namedPart(statusCallback: string | undefined): string | undefined {
  const part = statusCallback ? new URL(statusCallback).searchParams.get('part') : null;
  return part === null ? undefined : Buffer.from(part, 'base64url').toString('utf8');
}

describe("a reply's send ledger in Redis", () => {
  test('stored in one script and marked sent in one more, turn payload and all: no other command, no delivery id key', async () => {
    const customer = 'whatsapp:+447700918001';
    const inboundSid = newMessageSid();
    const replyKey = transcriptKeys.reply('whatsapp', inboundSid);
    monitor = await openMonitor(process.env.TEST_REDIS_URL!);
    const onReply: string[] = [];
    const onDeliveryKeys: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      const [name = '', ...rest] = args;
      const command = name.toLowerCase();
      if (rest.includes(replyKey)) {
        // A script's first run on this server: EVALSHA answered NOSCRIPT, then EVAL — one call of it.
        if (!(command === 'eval' && onReply.at(-1) === 'evalsha')) onReply.push(command);
      }
      if (rest.some((arg) => arg.startsWith(transcriptKeys.delivery('')))) onDeliveryKeys.push([command, ...rest]);
    });

    expect((await harness.sendWhatsapp({ from: customer, body: 'my order 1042', messageSid: inboundSid })).status).toBe(200);
    const partId = outboundMessageId('whatsapp', inboundSid, 0);
    const sent = await eventually(() => harness.twilio.messages.find((message) => message.to === customer));
    // The turn over and its records in MongoDB (read there: a read of the reply's key would be counted).
    await transcriptsWritten(harness.services);
    expect(await harness.services.transcripts.messages.findById(partId).lean()).toMatchObject({ status: 'queued', channelMessageId: sent.sid });
    // Everything Redis ran before this marker reached it is in the stream once the marker is.
    const marker = `mark:ledger:${inboundSid}`;
    const seen = new Promise<void>((resolve) => monitor?.on('monitor', (_time: string, args: string[]) => args[1] === marker && resolve()));
    await harness.services.redis.echo(marker);
    await seen;
    monitor.disconnect();
    monitor = undefined;

    expect(sent.body).toBe('Noted: my order 1042');
    expect(onReply).toEqual(['hsetnx', 'expire', 'evalsha', 'hget', 'hset']);
    expect(onDeliveryKeys.filter((command) => command.some((arg) => arg.includes(sent.sid)))).toEqual([]);
    // The payload went with the sent mark: nothing of it is left for a retry to finish again.
    expect(await harness.services.redis.hkeys(replyKey)).toEqual(['0']);
    expect(await harness.services.transcripts.takeTurn(partId)).toBeUndefined();
  });
});

describe("Twilio's status callbacks", () => {
  test("go to a URL that names the part, signed with it: the part's status moves in Redis and in MongoDB", async () => {
    const customer = 'whatsapp:+447700918002';
    const inboundSid = newMessageSid();
    await harness.sendWhatsapp({ from: customer, body: 'status please', messageSid: inboundSid });
    const sent = await eventually(() => harness.twilio.messages.find((message) => message.to === customer));
    const partId = outboundMessageId('whatsapp', inboundSid, 0);
    expect(sent.statusCallback?.startsWith(`${STATUS_ROUTE}?part=`)).toBe(true);
    expect(namedPart(sent.statusCallback)).toBe(partId);
    await eventually(async () => (await harness.services.transcripts.message(partId))?.status === 'queued');

    expect((await harness.sendStatus({ messageSid: sent.sid, status: 'delivered' })).status).toBe(204);
    expect((await harness.sendStatus({ messageSid: sent.sid, status: 'sent' })).status).toBe(204);
    expect(await harness.services.transcripts.message(partId)).toMatchObject({ status: 'delivered', channelMessageId: sent.sid });
    await transcriptsWritten(harness.services);
    expect(await harness.services.transcripts.messages.findById(partId).lean()).toMatchObject({ status: 'delivered', channelMessageId: sent.sid });
    expect(harness.logs.some((line) => line.event === 'delivery-status-recorded' && line.messageSid === sent.sid)).toBe(true);
  });

  test('signed for a URL that named no part, posted with one added: 403, nothing recorded', async () => {
    const customer = 'whatsapp:+447700918003';
    const inboundSid = newMessageSid();
    await harness.sendWhatsapp({ from: customer, body: 'forged please', messageSid: inboundSid });
    const sent = await eventually(() => harness.twilio.messages.find((message) => message.to === customer));
    const partId = outboundMessageId('whatsapp', inboundSid, 0);
    await eventually(async () => (await harness.services.transcripts.message(partId))?.status === 'queued');
    // A callback Twilio signed for the plain route, replayed with a part added to its URL.
    const params = statusCallbackParams({ accountSid: TEST_ACCOUNT_SID, messageSid: sent.sid, status: 'failed', errorCode: 63016 });
    const forged = await harness.http
      .post(`/webhooks/whatsapp/status?part=${Buffer.from(partId).toString('base64url')}`)
      .type('form')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, STATUS_ROUTE, params))
      .send(params);
    expect(forged.status).toBe(403);
    expect(await harness.services.transcripts.message(partId)).toMatchObject({ status: 'queued' });
  });

  test('a part an earlier version sent (its callback names none, its delivery id has a key) is still found', async () => {
    const { redis, transcripts } = harness.services;
    const sid = newMessageSid();
    const replyTo = newMessageSid();
    const partId = outboundMessageId('whatsapp', replyTo, 0);
    const at = new Date().toISOString();
    await redis.hset(
      transcriptKeys.reply('whatsapp', replyTo),
      '0',
      JSON.stringify({
        _id: partId,
        conversationId: 'whatsapp:+447700918004',
        channel: 'whatsapp',
        direction: 'outbound',
        text: 'sent before the deploy',
        replyTo,
        part: 0,
        partCount: 1,
        roleId: 'support',
        status: 'queued',
        channelMessageId: sid,
        createdAt: at,
        updatedAt: at,
      }),
    );
    await redis.set(transcriptKeys.delivery(sid), partId, 'EX', 60);
    expect((await harness.sendStatus({ messageSid: sid, status: 'read', url: STATUS_ROUTE })).status).toBe(204);
    expect(await transcripts.message(partId)).toMatchObject({ status: 'read', channelMessageId: sid });
    expect(harness.logs.some((line) => line.event === 'delivery-status-recorded' && line.messageSid === sid)).toBe(true);
  });

  test.each([
    ['not base64url', '%25%25'],
    ["another channel's part", Buffer.from('out:web:abc#0').toString('base64url')],
    ['not a reply part', Buffer.from('in:whatsapp:SM1').toString('base64url')],
  ])('a signed callback whose URL names %s: 400 with the reason, logged', async (_case, part) => {
    const response = await harness.sendStatus({ messageSid: newMessageSid(), status: 'sent', url: `${STATUS_ROUTE}?part=${part}` });
    expect(response.status).toBe(400);
    expect(String(response.body.error)).toMatch(/^part: expected (a base64url|the ledger key of a whatsapp reply part)/);
    expect(harness.logs.some((line) => line.event === 'webhook-rejected' && line.kind === 'status' && line.reason === 'malformed')).toBe(true);
  });
});

describe('a part whose send outcome was lost', () => {
  test("is looked up at Twilio: another part's send of the same words is not taken for its own, and it is sent", async () => {
    const { transcripts, channels } = harness.services;
    const channel = channels.get('whatsapp')!;
    const customer = 'whatsapp:+447700918005';
    const conversationId = 'whatsapp:+447700918005';
    const inbound = (messageId: string) => ({
      channel: 'whatsapp',
      conversationKey: conversationId,
      messageId,
      from: { address: customer },
      text: 'thanks',
      receivedAt: Date.now(),
      metadata: {},
    });
    const store = async (replyTo: string) => {
      const [part] = await transcripts.saveReplyParts({ conversationId, channel: 'whatsapp', replyTo, roleId: 'support', parts: ['You are welcome!'] });
      return part!;
    };
    // An earlier reply said the same words, sent and recorded, in the history.
    const earlier = await store(newMessageSid());
    const first = await sendPartOnce(transcripts, {
      channel,
      inbound: inbound(earlier.replyTo!),
      part: earlier,
      send: () => channel.transport.send(inbound(earlier.replyTo!), earlier.text, 0),
    });
    expect(first.outcome).toBe('sent');
    await transcripts.saveRecent(conversationId, [{ id: earlier._id, direction: 'outbound', text: earlier.text }]);
    // This reply's part was claimed and its worker died before Twilio got it.
    const lost = await store(newMessageSid());
    expect(await transcripts.claimPart(lost._id)).toBe(true);
    const found = await transcripts.message(lost._id);
    const result = await sendPartOnce(transcripts, {
      channel,
      inbound: inbound(lost.replyTo!),
      part: found!,
      send: () => channel.transport.send(inbound(lost.replyTo!), found!.text, 0),
    });

    expect(result.outcome).toBe('resent');
    const toCustomer = harness.twilio.messages.filter((message) => message.to === customer);
    expect(toCustomer.map((message) => message.body)).toEqual(['You are welcome!', 'You are welcome!']);
    expect(await transcripts.message(lost._id)).toMatchObject({ status: 'queued', channelMessageId: toCustomer[1]?.sid });
    expect(await transcripts.message(earlier._id)).toMatchObject({ channelMessageId: toCustomer[0]?.sid });
  });
});
