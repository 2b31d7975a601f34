/**
 * The send ledger's moves on a reply part (pending → sending → sent exactly once, by
 * compare-and-set scripts on its ledger entry, so a retried turn never sends a part twice), its
 * delivery statuses (a callback names the part it reports on; one for a part sent before callbacks
 * did finds it by its delivery id's key, which earlier versions wrote beside each sent part) and
 * which part recorded a delivery id (for resolving a part whose send outcome was lost).
 */
import { luaScript } from '../redis.js';
import { transcriptKeys } from './transcript-keys.js';
import { ledgerSlot, now, outranked, toRecord, type StoredPart, type TranscriptContext } from './transcript-records.js';
import type { MessageRecord, TranscriptStore } from './transcript-types.js';

// Marks a part sent (its delivery id, and its status unless a later one got there first: ARGV[4]
// lists the statuses it may move from, as a delivery callback may land before it) and, with
// ARGV[3] = '1', takes the reply's turn payload its entry holds (a reply's last part): returns 1
// when it was there. The entry is rewritten anyway, so the payload goes for free.
const markSentScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local entry = cjson.decode(raw)
local changes = cjson.decode(ARGV[2])
if not string.find(ARGV[4], ',' .. entry.status .. ',', 1, true) then changes.status = nil end
for k, v in pairs(changes) do entry[k] = v end
local taken = 0
if ARGV[3] == '1' and type(entry.turn) == 'string' then
  entry.turn = nil
  taken = 1
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return taken
`);

// Compare-and-set on one ledger entry: applies the patch when its status is listed (',a,b,'; '' any)
// and, with ARGV[4], unless the entry was sent as another delivery id.
// Returns 1 applied, 0 refused by its status, -1 no such entry, -2 another delivery id's.
const patchScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return -1 end
local entry = cjson.decode(raw)
if ARGV[4] and type(entry.channelMessageId) == 'string' and entry.channelMessageId ~= ARGV[4] then return -2 end
if ARGV[3] ~= '' and not string.find(ARGV[3], ',' .. entry.status .. ',', 1, true) then return 0 end
for k, v in pairs(cjson.decode(ARGV[2])) do entry[k] = v end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return 1
`);

type DeliveryMethods = Pick<
  TranscriptStore,
  'claimPart' | 'reclaimPart' | 'releasePart' | 'markPartSent' | 'markPartFailed' | 'deliveryOwners' | 'updateDeliveryStatus'
>;

/** A stored entry (undefined: unreadable). */
function readEntry(raw: string): MessageRecord | undefined {
  try {
    return toRecord(raw);
  } catch {
    return undefined;
  }
}

export function createTranscriptDelivery({ redis, outbox, record }: TranscriptContext): DeliveryMethods {
  const patch = async (messageId: string, changes: Partial<StoredPart>, from = '', deliveryId?: string): Promise<number> => {
    const slot = ledgerSlot(messageId);
    if (!slot) return -1;
    const args = [slot.field, JSON.stringify({ ...changes, updatedAt: now() }), from, ...(deliveryId === undefined ? [] : [deliveryId])];
    return Number(await patchScript(redis, [slot.key], args));
  };

  /** The part a callback that names none is about: the key earlier versions wrote beside each part they sent. */
  const legacyOwner = async (channelMessageId: string): Promise<string | undefined> =>
    (await redis.get(transcriptKeys.delivery(channelMessageId))) ?? undefined;

  /** Whether the part a callback names is stored and was not sent as another delivery id (a send whose outcome was lost, resent). */
  const isSentAs = async (messageId: string, channelMessageId: string): Promise<boolean> => {
    const slot = ledgerSlot(messageId);
    const raw = slot ? await redis.hget(slot.key, slot.field) : null;
    if (raw === null) return false;
    const sentAs = readEntry(raw)?.channelMessageId;
    return sentAs === undefined || sentAs === channelMessageId;
  };

  return {
    async deliveryOwners(messageIds) {
      const keys = new Set(messageIds.flatMap((messageId) => ledgerSlot(messageId)?.key ?? []));
      const owners = new Map<string, string>();
      for (const stored of await Promise.all([...keys].map((key) => redis.hgetall(key)))) {
        // Its parts' fields are numbers (beside them: a question, an earlier version's turn).
        for (const [field, raw] of Object.entries(stored)) {
          const entry = /^\d+$/.test(field) ? readEntry(raw) : undefined;
          if (entry?.channelMessageId !== undefined) owners.set(entry.channelMessageId, entry._id);
        }
      }
      return owners;
    },

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
      // ledger, and the retry records it from there (`partRecords`). The entry never regresses if
      // a status callback got there first.
      await record(records, [
        { kind: 'status', _id: messageId, status, channelMessageId, at },
        { kind: 'delivery', _id: channelMessageId, messageId, at },
      ]);
      const slot = ledgerSlot(messageId);
      if (!slot) return false;
      const taken = await markSentScript(
        redis,
        [slot.key],
        [slot.field, JSON.stringify({ status, channelMessageId, updatedAt: at }), takeTurn ? '1' : '', outranked(status)],
      );
      return Number(taken) === 1;
    },

    async releasePart(messageId) {
      await patch(messageId, { status: 'pending' }, ',sending,');
    },

    async markPartFailed(messageId, status, errorCode, errorMessage, records) {
      await record(records, [{ kind: 'status', _id: messageId, status, errorMessage, ...(errorCode ? { errorCode } : {}), at: now() }]);
      await patch(messageId, { status, errorMessage, ...(errorCode ? { errorCode } : {}) });
    },

    async updateDeliveryStatus({ channelMessageId, status, errorCode, errorMessage, messageId: named }) {
      const messageId = named ?? (await legacyOwner(channelMessageId));
      if (!messageId || (named !== undefined && !(await isSentAs(named, channelMessageId)))) return false;
      // The record first (the writer keeps the same rank rule), then a compare-and-set in one
      // script: a status applies only over a lower-ranked one, so callbacks arriving out of
      // order (or racing) never move a part backwards; nor does a callback of another send of it.
      const changes = { status, ...(errorCode ? { errorCode } : {}), ...(errorMessage ? { errorMessage } : {}) };
      await outbox.append([{ kind: 'status', _id: messageId, channelMessageId, ...changes, at: now() }]);
      await patch(messageId, changes, outranked(status), channelMessageId);
      return true;
    },
  };
}
