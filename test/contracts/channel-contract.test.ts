/**
 * Every channel passes the same contract: a stable id, a prompt fragment, grounding capped by
 * the orchestrator, replies split within the channel's limit and in order, a transport that
 * sends each part to the customer in order. WhatsApp, the web widget and the CLI alike.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createCliChannel } from '../../channels/cli/index.js';
import { createEventLog } from '../../channels/web/event-log.js';
import { createWebChannel } from '../../channels/web/index.js';
import { createWhatsappChannel } from '../../channels/whatsapp/index.js';
import { WHATSAPP_BODY_LIMIT } from '../../channels/whatsapp/split-message.js';
import { createLogger } from '../../src/logger.js';
import { createRedis } from '../../src/redis.js';
import type { ChannelDefinition, InboundMessage } from '../../src/contracts/index.js';
import { GROUNDING_CHAR_CAP, groundingSections } from '../../src/orchestrator/grounding.js';
import { ANONYMOUS_CALLER } from '../../src/tools/caller.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { TEST_ACCOUNT_SID, TEST_AUTH_TOKEN } from '../support/harness.js';

const inbound: InboundMessage = {
  channel: 'test',
  conversationKey: 'test:1',
  messageId: 'SM00000000000000000000000000000001',
  from: { address: 'whatsapp:+447700900001', displayName: 'Ana' },
  text: 'hello',
  receivedAt: Date.now(),
  // Whatever the customer controls, far past any cap: a WhatsApp profile name, a page's title and URL.
  metadata: { profileName: 'Ana'.repeat(3000), pageTitle: 'Ana'.repeat(3000), pageUrl: `https://shop.example/${'Ana'.repeat(3000)}` },
};

interface ChannelUnderTest {
  channel: ChannelDefinition;
  /** The texts the customer has received, in the order they arrived. */
  received(count: number): Promise<string[]>;
  close(): Promise<void>;
}

function describeChannelContract(name: string, build: () => Promise<ChannelUnderTest>, limit: number) {
  describe(`channel ${name}`, () => {
    let built: ChannelUnderTest;
    let channel: ChannelDefinition;
    beforeAll(async () => {
      built = await build();
      channel = built.channel;
    });
    afterAll(() => built.close());

    test('declares an id, a prompt fragment and tools with an origin, category and effect', () => {
      expect(channel.id).toMatch(/^[a-z]+$/);
      expect(channel.promptFragment.length).toBeGreaterThan(20);
      for (const tool of channel.tools) {
        expect(tool.origin).toBe('channel');
        expect(tool.category).toBeTruthy();
        expect(tool.effect).toBeTruthy();
      }
    });

    test('grounding stays under the orchestrator cap whatever the channel reports, and what the customer controls is never verified', async () => {
      const sources = await channel.grounding(
        {
          conversationId: 'c',
          firstTurn: false,
          runId: 'r',
          inbound,
          history: [],
          signal: new AbortController().signal,
          logger: createLogger({ sink: () => undefined }),
        },
        {},
        ANONYMOUS_CALLER,
      );
      const { verified, untrusted } = groundingSections(sources);
      expect(verified.length + untrusted.length).toBeLessThanOrEqual(GROUNDING_CHAR_CAP);
      expect(verified).not.toContain('AnaAna');
    });

    test('splits a long reply into ordered parts within its limit, losing no words', () => {
      const reply = Array.from({ length: 400 }, (_, index) => `Sentence number ${index} explains one more detail.`).join(' ');
      const parts = channel.splitReply(reply);
      expect(parts.every((part) => part.length <= limit)).toBe(true);
      expect(parts.join(' ').split(/\s+/)).toEqual(reply.split(/\s+/));
    });

    test('recognises its reset command and nothing else', () => {
      expect(channel.isResetCommand?.('please reset my password')).toBeFalsy();
    });

    test('sends each part of a reply to the customer, in order, each as its own message', async () => {
      const parts = ['First part of the reply.', 'Second part of the reply.'];
      const sent = [];
      for (const [part, text] of parts.entries()) sent.push(await channel.transport.send(inbound, text, part));
      expect(new Set(sent.map((message) => message.channelMessageId)).size).toBe(parts.length);
      expect(await built.received(parts.length)).toEqual(parts);
    });
  });
}

const quiet = createLogger({ sink: () => undefined });

describeChannelContract(
  'whatsapp',
  async () => {
    const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
    return {
      channel: createWhatsappChannel({
        accountSid: TEST_ACCOUNT_SID,
        authToken: TEST_AUTH_TOKEN,
        from: 'whatsapp:+14155238886',
        apiBaseUrl: twilio.baseUrl,
        statusCallbackUrl: 'https://example.test/webhooks/whatsapp/status',
        logger: quiet,
      }),
      received: async (count) => (await twilio.waitForMessages(count)).map((message) => message.body),
      close: () => twilio.close(),
    };
  },
  WHATSAPP_BODY_LIMIT,
);

describeChannelContract(
  'web',
  async () => {
    const redis = createRedis({ redisUrl: process.env.TEST_REDIS_URL!, redisClusterNodes: undefined });
    const events = createEventLog(redis);
    return {
      channel: createWebChannel({ events, logger: quiet, contacts: { findVerifiedUser: async () => undefined } }),
      received: async () =>
        (await events.after(inbound.conversationKey, '0-0')).flatMap((event) => (event.type === 'message' ? [String(event.data.text)] : [])),
      close: async () => {
        await events.close();
        await redis.quit();
      },
    };
  },
  Number.POSITIVE_INFINITY,
);

describeChannelContract(
  'cli',
  async () => {
    const written: string[] = [];
    return { channel: createCliChannel({ write: (text) => written.push(text) }), received: async () => written, close: async () => undefined };
  },
  Number.POSITIVE_INFINITY,
);

describe('whatsapp reply splitting', () => {
  test('prefers paragraph breaks, and never cuts a word unless one word is longer than the limit', async () => {
    const { splitMessage } = await import('../../channels/whatsapp/split-message.js');
    const paragraph = 'word '.repeat(250).trim();
    expect(splitMessage(`${paragraph}\n\n${paragraph}`, 1600)).toEqual([paragraph, paragraph]);
    expect(splitMessage('x'.repeat(3500), 1600).map((part) => part.length)).toEqual([1600, 1600, 300]);
  });
});
