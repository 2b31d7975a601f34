/**
 * A conversation's messages: an inbound message is recorded (to the outbox), a reply's parts are
 * stored once as its send ledger (`transcript-reply-parts.ts`), a ledger entry is read by its
 * message `_id`, the reply's one-shot `turn` payload taken or dropped (where the reply's parts were
 * resumed, or its last part's sent mark did not take it), and the apology stored once.
 */
import { luaScript } from '../redis.js';
import { LEDGER_TTL_SECONDS, transcriptKeys } from './transcript-keys.js';
import { ledgerSlot, now, toOutbox, toRecord, type StoredPart, type TranscriptContext } from './transcript-records.js';
import { createReplyParts } from './transcript-reply-parts.js';
import { APOLOGY_PART, inboundMessageId, outboundMessageId, type TranscriptStore } from './transcript-types.js';

// Stores one entry unless present (the apology); returns the stored one.
const saveOnceScript = luaScript(`
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return redis.call('HGET', KEYS[1], ARGV[1])
`);

// Takes a reply's turn payload: from its last part's entry (part 0 says how many there are) or,
// stored by an earlier version, from a field of its own. Returns it, or nil when already taken.
const takeScript = luaScript(`
local value = redis.call('HGET', KEYS[1], 'turn')
if value then
  redis.call('HDEL', KEYS[1], 'turn')
  return value
end
local first = redis.call('HGET', KEYS[1], '0')
if not first then return false end
local field = '0'
local raw = first
local count = tonumber(cjson.decode(first).partCount) or 1
if count > 1 then
  field = tostring(count - 1)
  raw = redis.call('HGET', KEYS[1], field)
  if not raw then return false end
end
local entry = cjson.decode(raw)
if type(entry.turn) ~= 'string' then return false end
value = entry.turn
entry.turn = nil
redis.call('HSET', KEYS[1], field, cjson.encode(entry))
return value
`);

type MessageMethods = Pick<
  TranscriptStore,
  'recordInbound' | 'markInboundFailed' | 'replyParts' | 'saveReplyParts' | 'takeTurn' | 'dropTurn' | 'message' | 'saveApology'
>;

export function createTranscriptMessages(context: TranscriptContext): MessageMethods {
  const { redis, outbox, record } = context;
  const takeTurn = async (messageId: string): Promise<string | undefined> => {
    const slot = ledgerSlot(messageId);
    if (!slot) return undefined;
    return ((await takeScript(redis, [slot.key], [])) as string | null) ?? undefined;
  };
  return {
    ...createReplyParts(context),

    async recordInbound({ conversationId, channel, channelMessageId, text, receivedAt, media }, records) {
      const at = receivedAt.toISOString();
      await record(records, [
        {
          kind: 'message',
          message: {
            _id: inboundMessageId(channel, channelMessageId),
            conversationId,
            channel,
            direction: 'inbound',
            text,
            channelMessageId,
            status: 'received',
            ...(media?.length ? { media } : {}),
            createdAt: at,
            updatedAt: at,
          },
        },
      ]);
    },

    async markInboundFailed({ conversationId, channel, channelMessageId, text, receivedAt, errorMessage }) {
      const _id = inboundMessageId(channel, channelMessageId);
      const received = receivedAt.toISOString();
      await outbox.append([
        {
          kind: 'message',
          message: { _id, conversationId, channel, direction: 'inbound', text, channelMessageId, status: 'received', createdAt: received, updatedAt: received },
        },
        { kind: 'status', _id, status: 'failed', errorMessage, at: now() },
      ]);
    },

    takeTurn,

    async dropTurn(messageId) {
      return (await takeTurn(messageId)) !== undefined;
    },

    async message(messageId) {
      const slot = ledgerSlot(messageId);
      const raw = slot ? await redis.hget(slot.key, slot.field) : null;
      return raw === null ? undefined : toRecord(raw);
    },

    async saveApology({ conversationId, channel, replyTo, text, part = APOLOGY_PART }) {
      const _id = outboundMessageId(channel, replyTo, part);
      const at = now();
      const entry: StoredPart = {
        _id,
        conversationId,
        channel,
        direction: 'outbound',
        text,
        replyTo,
        part,
        partCount: 1,
        roleId: 'system',
        status: 'pending',
        createdAt: at,
        updatedAt: at,
      };
      const stored = (await saveOnceScript(
        redis,
        [transcriptKeys.reply(channel, replyTo)],
        [String(part), JSON.stringify(entry), LEDGER_TTL_SECONDS],
      )) as string;
      const apology = toRecord(stored);
      await outbox.append([toOutbox(apology)]);
      return apology;
    },
  };
}
