/**
 * Crash accounting: a head's batch whose turn left a running mark of a worker without a
 * heartbeat is a batch a worker died in. The death is counted (`turn-deaths.ts`), which makes
 * the next attempt guarded and a suspect: run in a child process of its own (`turn-isolated.ts`)
 * or, where the worker's entry can't fork one, as the fleet's one suspect turn alone in its worker
 * (`turn-admission.ts`). A batch that killed the process running it alone (its child, or that
 * worker) is quarantined at once: given up on as `poison`, the decision stored first, as any
 * give-up. With children, a crashing message costs only the death of the crowd it first ran in,
 * shared with the messages beside it: N sent at once cost one worker restart (one more for each
 * later crowd a crasher starts in); run alone in workers, a restart more per crashing message.
 */
import type { InboxBatch } from './conversation-inbox.js';
import { batchOf, type TurnContext } from './turn-context.js';
import { ALONE_MARK, recordTurnDeath } from './turn-deaths.js';

/**
 * Deaths of workers running a batch alone (as the suspect turn) that quarantine it (given up on as
 * `poison`), so one message never crash-loops a fleet: the first is decisive, since nothing else
 * ran in that process. Any death makes the next attempt guarded and a suspect turn; a death beside
 * other turns is no evidence against the batch.
 */
const MAX_ALONE_DEATHS = 1;

/**
 * A worker died in the turn marked `mark` on the head's batch: counted; a batch a worker died in
 * while running it alone is quarantined (the decision stored, as `givenUp`).
 */
async function countDeath(context: TurnContext, conversationKey: string, batch: InboxBatch, mark: string): Promise<InboxBatch> {
  const { redis, inbox, logger, metrics } = context.options;
  const { messageId, channel } = batch.entries[0].message;
  const deaths = await recordTurnDeath(redis, conversationKey, messageId, mark);
  logger.error('turn-worker-died', { conversationKey, messageId, crashes: deaths.crashes, alone: deaths.alone });
  metrics.increment('turn_crashes_total', { channel });
  if (deaths.alone < MAX_ALONE_DEATHS) return { ...batch, crashes: deaths.crashes };
  await inbox.markGivenUp(conversationKey, messageId, 'poison');
  return { ...batch, crashes: deaths.crashes, givenUp: 'poison' };
}

/**
 * The head's batch as read, with any death in its last turn counted: `quarantined` when this
 * death quarantined it (its customer and operator told here, under the lock's fence; the caller
 * acknowledges it as any batch given up on).
 */
export async function accountForDeath(
  context: TurnContext,
  conversationKey: string,
  read: InboxBatch,
  assertHeld: () => void,
): Promise<{ batch: InboxBatch; quarantined: boolean }> {
  // The worker that ran this batch's last turn died in it (an ended turn clears its mark; one
  // that only lost the lock is alive, cuts its turn short and clears it).
  if (read.running === undefined || !(await context.heartbeat.isDead(read.running))) return { batch: read, quarantined: false };
  const batch = await countDeath(context, conversationKey, read, read.running);
  const quarantined = batch.givenUp !== undefined;
  if (quarantined)
    await context.options.giveUp(
      batchOf(batch),
      { reason: 'poison', error: new Error('workers died answering it alone'), attempts: batch.crashes },
      assertHeld,
    );
  return { batch, quarantined };
}

/**
 * The child running the suspect batch's turn alone (`turn-isolated.ts`) died: a death alone,
 * counted against the turn marked `mark` (this worker's), and the batch quarantined at once: the
 * decision stored, its customer and operator told under the lock's fence. Returns the batch given
 * up on (to acknowledge).
 */
export async function quarantineChildDeath(
  context: TurnContext,
  conversationKey: string,
  batch: InboxBatch,
  mark: string,
  assertHeld: () => void,
): Promise<InboxBatch> {
  const quarantined = await countDeath(context, conversationKey, batch, mark + ALONE_MARK);
  await context.options.giveUp(
    batchOf(quarantined),
    { reason: 'poison', error: new Error('the process answering it alone died'), attempts: quarantined.crashes },
    assertHeld,
  );
  return quarantined;
}
