/**
 * `npm run chat`: talk to the assistant from a terminal through the same orchestrator, real
 * Redis and MongoDB and the configured model (OpenAI, or OPENAI_BASE_URL). Turns bypass the
 * queue but take the same per-conversation path as a worker. `/reset` starts over,
 * `/decision` shows the last turn's role, tier, facts and offered tools, `/quit` leaves.
 * The stores must be running (the service's, or your own): without them it says so in one line
 * and exits; a turn that gets no answer is one line naming the cause, and the chat goes on.
 */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { createCliChannel } from '../channels/cli/index.js';
import { noAnswerLine, storesDown } from './chat-words.js';
import { loadConfig } from './config.js';
import { createServices } from './composition-root.js';
import { createLogger } from './logger.js';
import { createInboundHandler } from './turn/handle-inbound.js';

const config = loadConfig();
const output = process.stdout;
const down = await storesDown(config);
if (down) {
  process.stderr.write(`${down}\n`);
  process.exit(1);
}
// Errors only: a failed turn is told in words below, not in the log's JSON lines.
const services = await createServices(config, {
  logger: createLogger({ level: 'error', sink: (line) => process.stderr.write(`${line}\n`) }),
});
// Turns run in this process: it answers from the business's knowledge too.
services.knowledge.start();
const channel = createCliChannel({ write: (text) => output.write(`\nassistant › ${text}\n\n`) });
let lastRunId: string | undefined;
const handle = createInboundHandler({
  channels: new Map([[channel.id, channel]]),
  orchestrator: services.orchestrator,
  transcripts: services.transcripts,
  logger: services.logger,
  metrics: services.metrics,
  onTurn: (result) => {
    lastRunId = result.runId;
  },
});
const conversationKey = `cli:${process.env.USER ?? 'developer'}`;

async function showDecision(): Promise<void> {
  const decision = lastRunId ? await services.orchestrator.decision(conversationKey, lastRunId) : undefined;
  output.write(decision ? `${JSON.stringify(decision, null, 2)}\n` : 'no decision stored (yet, or it expired)\n');
}

const terminal = createInterface({ input: process.stdin, terminal: false });
output.write("Talk to the assistant. /reset starts over, /decision shows the last turn's decision, /quit leaves.\n\nyou › ");
// Lines are read as a stream (not one question at a time) so nothing typed during a turn is lost.
for await (const line of terminal) {
  const text = line.trim();
  if (text === '/quit') break;
  if (text === '/decision') await showDecision();
  else if (text) {
    await handle(
      {
        message: {
          channel: channel.id,
          conversationKey,
          messageId: randomUUID(),
          from: { address: conversationKey },
          text,
          receivedAt: Date.now(),
          metadata: {},
        },
        earlier: [],
      },
      new AbortController().signal,
      // One process, no lock: nothing else answers this conversation.
      () => undefined,
    ).catch(async (error: unknown) => output.write(`${await noAnswerLine(error, config.model)}\n\n`));
  }
  output.write('you › ');
}
terminal.close();
await services.close();
