/**
 * The headless CLI channel, built by `createCliChannel(settings)`: a developer's terminal
 * conversation through the same orchestrator. No screen to ground on and no hand-off tools;
 * replies are written whole to the terminal.
 */
import type { ChannelDefinition } from '../../src/contracts/index.js';

const CLI_CHANNEL_ID = 'cli';

export interface CliChannelSettings {
  /** Where replies go (the terminal). */
  write(text: string): void;
}

let sent = 0;

export function createCliChannel(settings: CliChannelSettings): ChannelDefinition {
  return {
    id: CLI_CHANNEL_ID,
    promptFragment: 'You are talking with a developer testing the assistant in a terminal. Reply as you would to a customer.',
    tools: [],
    capabilityTools: {},
    grounding: () => [],
    splitReply: (text) => [text],
    isResetCommand: (text) => text.trim() === '/reset',
    transport: {
      async send(_inbound, text) {
        settings.write(text);
        sent += 1;
        return { channelMessageId: `cli-${process.pid}-${sent}`, status: 'delivered' };
      },
    },
  };
}
