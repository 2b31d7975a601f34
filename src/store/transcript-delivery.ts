/**
 * The send ledger's moves on a reply part (pending → sending → sent exactly once, by
 * compare-and-set scripts on its ledger entry, so a retried turn never sends a part twice) and
 * the delivery ids (Twilio's SID) that map to its ledger key for status callbacks.
 */
import { luaScript } from '../redis.js';
import { LEDGER_TTL_SECONDS, transcriptKeys } from './transcript-keys.js';
import { ledgerSlot, now, outranked, type StoredPart, type TranscriptContext } from './transcript-records.js';
import type { TranscriptStore } from './transcript-types.js';

// Marks a part sent (its delivery id, and its status unless a later one got there first: ARGV[4]
// lists the statuses it may move from, as a delivery callback may land before it on a cluster,
// where the delivery id is on another node) and, with ARGV[3] = 'turn', takes the reply's turn
// payload: returns 1 when it was there.
const markSentScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if raw then
  local entry = cjson.decode(raw)
  local changes = cjson.decode(ARGV[2])
  if not string.find(ARGV[4], ',' .. entry.status .. ',', 1, true) then changes.status = nil end
  for k, v in pairs(changes) do entry[k] = v end
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
end
if ARGV[3] == '' then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[3])
`);

// Compare-and-set on one ledger entry: applies the patch when its status is listed (',a,b,'; '' any).
// Returns 1 applied, 0 refused by its status, -1 no such entry.
const patchScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return -1 end
local entry = cjson.decode(raw)
if ARGV[3] ~= '' and not string.find(ARGV[3], ',' .. entry.status .. ',', 1, true) then return 0 end
for k, v in pairs(cjson.decode(ARGV[2])) do entry[k] = v end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return 1
`);

type DeliveryMethods = Pick<
  TranscriptStore,
  'claimPart' | 'reclaimPart' | 'releasePart' | 'markPartSent' | 'markPartFailed' | 'deliveryOwner' | 'updateDeliveryStatus'
>;

export function createTranscriptDelivery({ redis, outbox, record }: TranscriptContext): DeliveryMethods {
  const patch = async (messageId: string, changes: Partial<StoredPart>, from = ''): Promise<number> => {
    const slot = ledgerSlot(messageId);
    if (!slot) return -1;
    return Number(await patchScript(redis, [slot.key], [slot.field, JSON.stringify({ ...changes, updatedAt: now() }), from]));
  };

  const deliveryOwner = async (channelMessageId: string): Promise<string | undefined> =>
    (await redis.get(transcriptKeys.delivery(channelMessageId))) ?? undefined;

  return {
    deliveryOwner,

    async claimPart(messageId) {
      return (await patch(messageId, { status: 'sending', claimedAt: now() }, ',pending,')) === 1;
    },

    async reclaimPart(messageId) {
      await patch(messageId, { status: 'sending', claimedAt: now() });
    },

    async markPartSent(messageId, channelMessageId, status, records, takeTurn) {
      const at = now();
      // The record first: a crash before the ledger write leaves the part `sending`, resolved by
      // lookup. A turn's records flush after it: a crash before that leaves the part `sent` in the
      // ledger, and the retry records it from there (`partRecords`).
      await record(records, [
        { kind: 'status', _id: messageId, status, channelMessageId, at },
        { kind: 'delivery', _id: channelMessageId, messageId, at },
      ]);
      const slot = ledgerSlot(messageId);
      // The entry and the delivery id are independent writes (on two slots), sent together: a
      // lookup accepts a send whose delivery id is its own, and the entry never regresses if a
      // callback finds the delivery id first.
      const [taken] = await Promise.all([
        slot
          ? markSentScript(
              redis,
              [slot.key],
              [slot.field, JSON.stringify({ status, channelMessageId, updatedAt: at }), takeTurn ? 'turn' : '', outranked(status)],
            )
          : 0,
        redis.set(transcriptKeys.delivery(channelMessageId), messageId, 'EX', LEDGER_TTL_SECONDS),
      ]);
      return Number(taken) === 1;
    },

    async releasePart(messageId) {
      await patch(messageId, { status: 'pending' }, ',sending,');
    },

    async markPartFailed(messageId, status, errorCode, errorMessage, records) {
      await record(records, [{ kind: 'status', _id: messageId, status, errorMessage, ...(errorCode ? { errorCode } : {}), at: now() }]);
      await patch(messageId, { status, errorMessage, ...(errorCode ? { errorCode } : {}) });
    },

    async updateDeliveryStatus({ channelMessageId, status, errorCode, errorMessage }) {
      const messageId = await deliveryOwner(channelMessageId);
      if (!messageId) return false;
      // The record first (the writer keeps the same rank rule), then a compare-and-set in one
      // script: a status applies only over a lower-ranked one, so callbacks arriving out of
      // order (or racing) never move a part backwards.
      const changes = { status, ...(errorCode ? { errorCode } : {}), ...(errorMessage ? { errorMessage } : {}) };
      await outbox.append([{ kind: 'status', _id: messageId, channelMessageId, ...changes, at: now() }]);
      await patch(messageId, changes, outranked(status));
      return true;
    },
  };
}
