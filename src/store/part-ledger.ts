/**
 * A transcript message as a send-ledger entry: its state, its storage (claim → send → sent,
 * release, fail) on the transcript store, and how a lost send is looked up at the channel.
 * One owner for what reply parts, apologies and teammate messages all go through.
 */
import { ChannelSendError, errorField, errorText, isRetryable } from '../errors/index.js';
import { sendOnce, type FailedSendAction, type LedgerResult, type LedgerState, type LedgerStore } from '../ledger/send-ledger.js';
import type { ChannelDefinition, InboundMessage, SentStatus } from '../contracts/index.js';
import type { MessageRecord, TranscriptStore, TurnRecords } from './transcript-store.js';

/** What a channel answers for a sent part. */
export type PartReceipt = { channelMessageId: string; status: SentStatus };

/** Ledger states of a part: `uncertain` (an outcome recorded unknown) is resolved like `sending`. */
export function partState(part: MessageRecord): LedgerState {
  if (part.status === 'pending') return 'pending';
  return part.status === 'sending' || part.status === 'uncertain' ? 'sending' : 'settled';
}

/**
 * The ledger's storage of one part, by its `_id`; its transcript records go to a turn's `records`
 * when given. With `takeTurn`, marking it sent also takes the reply's turn (`onTurnTaken` when it did).
 */
function partLedgerStore(
  transcripts: TranscriptStore,
  partId: string,
  records: TurnRecords | undefined,
  takeTurn: boolean,
  onTurnTaken: () => void,
): LedgerStore<MessageRecord, PartReceipt> {
  return {
    claim: () => transcripts.claimPart(partId),
    readBack: () => transcripts.message(partId),
    reclaim: () => transcripts.reclaimPart(partId),
    markSent: async (receipt) => {
      if (await transcripts.markPartSent(partId, receipt.channelMessageId, receipt.status, records, takeTurn)) onTurnTaken();
    },
    release: () => transcripts.releasePart(partId),
    markFailed: (error) => {
      const code = errorField(error, 'code');
      return transcripts.markPartFailed(partId, 'failed', code === undefined ? undefined : String(code), errorText(error), records);
    },
  };
}

/**
 * Finds a part whose send outcome was lost among what the channel sent since it was claimed:
 * the same text may have gone out for another part or turn, so only a send no other part
 * recorded counts. Those parts are its reply's and the conversation's recent ones (the sends
 * before its claim: nothing else in the conversation is sent while it is unresolved).
 * Undefined when the channel can't look sends up.
 */
function partLookup(transcripts: TranscriptStore, channel: ChannelDefinition, inbound: InboundMessage) {
  const findSent = channel.transport.findSent;
  if (!findSent) return undefined;
  return async (stored: MessageRecord): Promise<PartReceipt | undefined> => {
    const candidates = await findSent.call(channel.transport, inbound, stored.text, stored.claimedAt ?? stored.updatedAt);
    if (candidates.length === 0) return undefined;
    const recent = await transcripts.recent(stored.conversationId);
    const owners = await transcripts.deliveryOwners([stored._id, ...recent.filter((message) => message.direction === 'outbound').map((message) => message.id)]);
    return candidates.find((candidate) => (owners.get(candidate.channelMessageId) ?? stored._id) === stored._id);
  };
}

/**
 * What a failed send leaves: a refusal leaves nothing sent (back to pending); a lost outcome (a
 * timeout) stays `sending`, so the retry looks it up instead of sending blind; a refusal for
 * good fails the part.
 */
function partAfterFailedSend(error: unknown): FailedSendAction {
  if (isRetryable(error)) return error instanceof ChannelSendError && error.outcomeUnknown ? 'keep' : 'release';
  return error instanceof ChannelSendError ? 'fail' : 'keep';
}

/**
 * Sends one part at most once through the send ledger, under its conversation's lock (nobody
 * else sends the conversation's parts: exclusive). `send` makes the channel call; a lost outcome
 * is looked up at the channel unless `lookup` is false (a template send can't be found by text).
 * A part stored claimed for this attempt (`claimedNow`) is sent with no claim of its own. With
 * `takeTurn` (a reply's last part, whose parts this attempt stored), marking it sent takes the
 * reply's turn too: `turnTaken` says whether it was still there.
 */
export async function sendPartOnce(
  transcripts: TranscriptStore,
  options: {
    channel: ChannelDefinition;
    inbound: InboundMessage;
    part: MessageRecord;
    send: () => Promise<PartReceipt>;
    lookup?: boolean;
    records?: TurnRecords | undefined;
    takeTurn?: boolean;
    onResolved?: (outcome: 'found' | 'resent', found?: PartReceipt) => void;
  },
): Promise<LedgerResult<PartReceipt> & { turnTaken: boolean }> {
  const { part } = options;
  const lookup = options.lookup === false ? undefined : partLookup(transcripts, options.channel, options.inbound);
  let turnTaken = false;
  const result = await sendOnce<MessageRecord, PartReceipt>({
    entry: part,
    id: part._id,
    state: partState,
    exclusive: true,
    claimed: part.claimedNow === true,
    store: partLedgerStore(transcripts, part._id, options.records, options.takeTurn === true, () => (turnTaken = true)),
    channel: { send: options.send, ...(lookup ? { lookup } : {}), afterFailedSend: partAfterFailedSend },
    ...(options.onResolved ? { onResolved: options.onResolved } : {}),
  });
  return { ...result, turnTaken };
}
