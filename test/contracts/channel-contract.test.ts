/**
 * Every channel passes the same contract: a stable id, a prompt fragment, grounding capped by
 * the orchestrator, replies split within the channel's limit and in order, a transport that
 * sends. Shaped by WhatsApp and the CLI together.
 */
import { describe, expect, test } from '@jest/globals';
import { createCliChannel } from '../../channels/cli/index.js';
import { createWhatsappChannel } from '../../channels/whatsapp/index.js';
import { WHATSAPP_BODY_LIMIT } from '../../channels/whatsapp/split-message.js';
import { createLogger } from '../../src/logger.js';
import type { ChannelDefinition, InboundMessage } from '../../src/orchestrator/contracts.js';
import { GROUNDING_CHAR_CAP, groundingSections } from '../../src/orchestrator/grounding.js';
import { ANONYMOUS_CALLER } from '../../src/tools/caller.js';

const inbound: InboundMessage = {
  channel: 'test',
  conversationKey: 'test:1',
  messageId: 'SM00000000000000000000000000000001',
  from: { address: 'whatsapp:+447700900001', displayName: 'Ana' },
  text: 'hello',
  receivedAt: Date.now(),
  metadata: { profileName: 'Ana'.repeat(3000) },
};

function describeChannelContract(name: string, build: () => ChannelDefinition, limit: number) {
  describe(`channel ${name}`, () => {
    const channel = build();

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
      const sources = await channel.grounding({ conversationId: 'c', firstTurn: false, runId: 'r', inbound, history: [], signal: new AbortController().signal, logger: createLogger({ sink: () => undefined }) }, {}, ANONYMOUS_CALLER);
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
  });
}

describeChannelContract('whatsapp', () =>
  createWhatsappChannel({
    accountSid: `AC${'0'.repeat(32)}`,
    authToken: 'x'.repeat(32),
    from: 'whatsapp:+14155238886',
    apiBaseUrl: 'http://127.0.0.1:9',
    statusCallbackUrl: 'https://example.test/webhooks/whatsapp/status',
    logger: createLogger({ sink: () => undefined }),
  }), WHATSAPP_BODY_LIMIT);
describeChannelContract('cli', () => createCliChannel({ write: () => undefined }), Number.POSITIVE_INFINITY);

describe('whatsapp reply splitting', () => {
  test('prefers paragraph breaks, and never cuts a word unless one word is longer than the limit', async () => {
    const { splitMessage } = await import('../../channels/whatsapp/split-message.js');
    const paragraph = 'word '.repeat(250).trim();
    expect(splitMessage(`${paragraph}\n\n${paragraph}`, 1600)).toEqual([paragraph, paragraph]);
    expect(splitMessage('x'.repeat(3500), 1600).map((part) => part.length)).toEqual([1600, 1600, 300]);
  });
});
