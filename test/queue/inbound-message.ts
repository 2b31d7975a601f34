/** A WhatsApp-shaped customer message for the queue suites: a fresh message id, received now unless told. */
import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../../src/contracts/index.js';

export const inboundMessage = (conversationKey: string, text: string, extra: Partial<InboundMessage> = {}): InboundMessage => ({
  channel: 'whatsapp',
  conversationKey,
  messageId: `SM${randomUUID().replace(/-/g, '')}`,
  from: { address: conversationKey },
  text,
  receivedAt: Date.now(),
  metadata: {},
  ...extra,
});
