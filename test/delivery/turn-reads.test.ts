/**
 * A turn's first reads go out while the worker opens the conversation, not after: who is talking
 * (the contact index) and the orchestrator's state (one MGET) are sent with the conversation's
 * read and the takeover read, so the turn waits one Redis round trip for all of them instead of
 * one after another. Seen on Redis's MONITOR (filtered to this suite's conversation), in the order
 * Redis ran them: the state's MGET before the conversation's HGETALL on a customer's second
 * message. Its first message's state is cleared (one DEL), not read, and the pointer to the role
 * that answered is still written before the reply is stored; both still fail the turn when they
 * fail (`test/orchestrator/turn-state-writes.test.ts`).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Redis } from 'ioredis';
import { stateKeys } from '../../src/orchestrator/state/keys.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';

let harness: Harness;
let monitor: Redis | undefined;
beforeAll(async () => {
  harness = await startHarness({ script: ({ userText }) => ({ text: `Noted: ${userText}` }) });
});
afterAll(async () => {
  monitor?.disconnect();
  await harness.close();
});

describe("a turn's first reads", () => {
  test("the state's MGET runs before the conversation's HGETALL, and a first turn's state is cleared before the role pointer and the reply are written", async () => {
    const customer = 'whatsapp:+447700918101';
    const key = 'whatsapp:+447700918101';
    const conversation = transcriptKeys.conversation(key);
    const pointer = stateKeys.activeRole(key);
    // This suite's replies only: other suites' customers share the server (MONITOR sees every database).
    const sids = [newMessageSid(), newMessageSid()];
    const replies = new Set(sids.map((sid) => transcriptKeys.reply('whatsapp', sid)));
    monitor = await openMonitor(process.env.TEST_REDIS_URL!);
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      const [name = '', ...rest] = args;
      const command = name.toLowerCase();
      if (command === 'mget' && rest.includes(pointer)) seen.push('state mget');
      else if (command === 'del' && rest.includes(pointer)) seen.push('state del');
      else if (command === 'set' && rest[0] === pointer) seen.push('pointer set');
      else if (command === 'hgetall' && rest[0] === conversation) seen.push('conversation hgetall');
      else if (command === 'hsetnx' && replies.has(rest[0] ?? '')) seen.push('reply stored');
      else if (command === 'echo' && rest[0]?.startsWith('mark:turn-reads:')) seen.push(rest[0]);
    });
    const answered = async (body: string, messageSid: string) => {
      expect((await harness.sendWhatsapp({ from: customer, body, messageSid })).status).toBe(200);
      await eventually(() => harness.twilio.messages.find((message) => message.to === customer && message.body === `Noted: ${body}`));
      // Everything Redis ran before this marker reached it is in the stream once the marker is.
      const marker = `mark:turn-reads:${body}`;
      await harness.services.redis.echo(marker);
      await eventually(() => seen.includes(marker));
    };

    await answered('first', sids[0]!);
    await answered('second', sids[1]!);
    monitor.disconnect();
    monitor = undefined;

    const first = seen.slice(0, seen.indexOf('mark:turn-reads:first'));
    const second = seen.slice(first.length + 1, seen.indexOf('mark:turn-reads:second'));
    // First message: read ahead with the open (unused: the conversation is new), then cleared,
    // then the pointer to the role that answered, then the reply.
    expect(first).toEqual(['state mget', 'conversation hgetall', 'state del', 'pointer set', 'reply stored']);
    // Second message: the state read ahead of the open is the turn's one read of it; the role is unchanged.
    expect(second).toEqual(['state mget', 'conversation hgetall', 'reply stored']);
  });
});
