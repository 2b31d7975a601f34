/**
 * A turn worker in its own OS process, for tests that kill a worker mid-turn. Configured by
 * the parent through the environment (the same variables the service reads, plus the queue
 * prefix and a model delay); prints `model-called <text>` when the model is asked, so the
 * parent knows when to kill it (or, on SIGTERM, prints `shutdown-start` and shuts down like main.ts).
 * Given the business's passages, the model cites the first (the reply ends with its "Source:" line).
 */
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { isolateSuspectTurns } from '../../src/queue/suspect-child.js';
import { QUEUE_PREFIX } from '../../src/redis.js';
import { createDeterministicModels } from './deterministic-model.js';

const delayMs = Number(process.env.TEST_MODEL_DELAY_MS ?? '0');
/** `handoff`: the model books a sales call when asked for a demo (for the hand-off kill test). */
const handoffScript = process.env.TEST_SCRIPT === 'handoff';
/**
 * `poison`: a message containing POISON aborts the process while its turn runs (a fault hook, as a
 * fatal bug or an out-of-memory would); one containing QUIT makes it exit cleanly (code 0) instead.
 */
const poisonScript = process.env.TEST_SCRIPT === 'poison';
/** `action`: the model calls the reschedule write when asked to (for the confirmed-action kill test). */
const actionScript = process.env.TEST_SCRIPT === 'action';
const models = createDeterministicModels((call) => {
  process.stdout.write(`model-called ${call.userText}\n`);
  if (poisonScript && call.userText.includes('POISON')) process.abort();
  if (poisonScript && call.userText.includes('QUIT')) process.exit(0);
  if (handoffScript && /demo/i.test(call.userText) && call.toolNames.includes('book_sales_call') && call.toolResults.length === 0) {
    return { toolCalls: [{ name: 'book_sales_call', input: { reason: 'Demo for a team of 12' } }] };
  }
  // Told an action's outcome: says so and takes a minute (the kill test kills it there, the write done, the reply not sent).
  if (actionScript && process.env.TEST_HOLD_OUTCOME === 'on' && call.system.includes('Continue from there.')) {
    process.stdout.write('outcome-called\n');
    return { text: 'Outcome told by the worker that died', delayMs: 60_000 };
  }
  if (actionScript && call.userText.includes('do:reschedule') && call.toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-06' } }] };
  }
  // Given the business's passages: names the first as its source (the service then ends the reply with its "Source:" line).
  if (call.system.includes('<source n="1">')) return { text: `[sources: 1]\nSlow answer to: ${call.userText}`, delayMs };
  return { text: `Slow answer to: ${call.userText}`, delayMs };
});

// Like src/main.ts: a turn a worker already died in runs in a child process (this entry again).
// `TEST_CHILD_FAILS=on`: such a child exits at start (a host that can't run one).
if (process.env.TEST_CHILD_FAILS === 'on' && process.argv.includes('--suspect-turn-child')) process.exit(1);
isolateSuspectTurns();
const services = await createServices(loadConfig(), {
  models,
  logger: createLogger({ level: 'error', sink: (line) => process.stderr.write(`${line}\n`) }),
  queuePrefix: process.env.TEST_QUEUE_PREFIX ?? QUEUE_PREFIX,
});
const worker = services.startWorker();
await worker.waitUntilReady();
process.stdout.write('worker-ready\n');
// SIGTERM as src/main.ts handles it: stop taking turns, let the held ones finish, close, exit 0.
process.once('SIGTERM', () => {
  process.stdout.write('shutdown-start\n');
  services.beginShutdown();
  void services.close().then(() => process.exit(0));
});
