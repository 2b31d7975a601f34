/**
 * A one-message turn's input for a test that drives the orchestrator directly (no worker): the
 * message as the channel's inbound with a fresh id (unless given), the history that message alone,
 * a signal nobody aborts, a logger that writes nothing below errors.
 */
import { randomUUID } from 'node:crypto';
import type { TurnInput } from '../../src/contracts/index.js';
import { createLogger } from '../../src/logger.js';

const quiet = createLogger({ level: 'error', sink: () => undefined });

export function turnInput(
  conversationId: string,
  text: string,
  { channelId = 'cli', firstTurn = true, messageId = randomUUID() }: { channelId?: string; firstTurn?: boolean; messageId?: string } = {},
): TurnInput {
  return {
    conversationId,
    firstTurn,
    runId: randomUUID(),
    inbound: { channel: channelId, conversationKey: conversationId, messageId, from: { address: conversationId }, text, receivedAt: Date.now(), metadata: {} },
    history: [{ role: 'user', content: text }],
    signal: new AbortController().signal,
    logger: quiet,
  };
}
