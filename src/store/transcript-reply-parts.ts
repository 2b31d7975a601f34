/**
 * A reply's parts, stored once in Redis as its send ledger (one hash per reply under the
 * conversation's hash tag, `transcript-keys.ts`), each field a ledger entry keyed by its message
 * `_id` (`out:<channel>:<inbound>#<part>`); the last part's entry carries the reply's one-shot
 * `turn` payload (taken by the write that marks it sent), the reply its `question` (the answers
 * to tap its last part is sent with, a field of its own stored with the parts). A retried attempt
 * gets what the first one stored.
 */
import { StorageWriteError } from '../errors/index.js';
import { luaScript, type RedisClient } from '../redis.js';
import { LEDGER_TTL_SECONDS, transcriptKeys } from './transcript-keys.js';
import { fromStored, partRecords, storedQuestion, toOutbox, toQuestion, toRecord, type StoredPart, type TranscriptContext } from './transcript-records.js';
import { outboundMessageId, type MessageRecord, type ReplyQuestion, type TranscriptStore } from './transcript-types.js';

// Stores a reply's parts (and its question) unless an earlier attempt stored them.
const savePartsScript = luaScript(`
if redis.call('HEXISTS', KEYS[1], '0') == 1 then return 0 end
local fields = {}
for i = 3, #ARGV do
  fields[#fields + 1] = tostring(i - 3)
  fields[#fields + 1] = ARGV[i]
end
if ARGV[2] ~= '' then
  fields[#fields + 1] = 'question'
  fields[#fields + 1] = ARGV[2]
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`);

/**
 * Stores a reply's entries unless an earlier attempt stored them; 1 when this call stored them.
 * A reply of one part and no question (most replies) is one HSETNX and its EXPIRE, not a script
 * (an EXPIRE after an earlier attempt's entry only renews it).
 */
async function storeParts(redis: RedisClient, key: string, question: string, entries: string[]): Promise<number> {
  const [only] = entries;
  if (only === undefined || entries.length > 1 || question !== '')
    return Number(await savePartsScript(redis, [key], [LEDGER_TTL_SECONDS, question, ...entries]));
  const results = (await redis.pipeline().hsetnx(key, '0', only).expire(key, LEDGER_TTL_SECONDS).exec()) ?? [];
  for (const [error] of results) if (error) throw error;
  return Number(results[0]?.[1]);
}

/** The parts with the reply's question on the last (the one it is sent with). */
function withQuestion(parts: MessageRecord[], question: ReplyQuestion | undefined): MessageRecord[] {
  return question ? parts.map((part) => (part.part === (part.partCount ?? 1) - 1 ? { ...part, question } : part)) : parts;
}

export function createReplyParts({ redis, record }: TranscriptContext): Pick<TranscriptStore, 'replyParts' | 'saveReplyParts'> {
  const replyParts = async (channel: string, replyTo: string): Promise<MessageRecord[]> => {
    const stored = await redis.hgetall(transcriptKeys.reply(channel, replyTo));
    if (stored['0'] === undefined) return [];
    const first = toRecord(stored['0']);
    const rest = Array.from({ length: Math.max(0, (first.partCount ?? 1) - 1) }, (_, index) => stored[String(index + 1)]);
    return withQuestion([first, ...rest.filter((raw) => raw !== undefined).map(toRecord)], toQuestion(stored.question));
  };

  return {
    replyParts,

    async saveReplyParts({ conversationId, channel, replyTo, roleId, parts, turn, question, claimFirst, guidance }, records) {
      const started = Date.now();
      const documents = parts.map((text, index): StoredPart => ({
        _id: outboundMessageId(channel, replyTo, index),
        conversationId,
        channel,
        direction: 'outbound',
        text,
        replyTo,
        part: index,
        partCount: parts.length,
        roleId,
        ...(index === 0 && guidance ? { guidance } : {}),
        status: 'pending',
        // Parts share one turn; distinct timestamps keep them in order when read back.
        createdAt: new Date(started + index).toISOString(),
        updatedAt: new Date(started + index).toISOString(),
      }));
      // The first part claimed as it is stored (see `claimFirst`); its record still says pending, as a claim's would.
      const claimed = claimFirst
        ? documents.map((document, index) => (index === 0 ? { ...document, status: 'sending' as const, claimedAt: document.createdAt } : document))
        : documents;
      const inserted = await storeParts(
        redis,
        transcriptKeys.reply(channel, replyTo),
        question ? storedQuestion(question) : '',
        // The turn payload (a string, kept as written) in the last part's entry, whose sent mark takes it.
        claimed.map((document, index) => JSON.stringify(turn !== undefined && index === claimed.length - 1 ? { ...document, turn } : document)),
      );
      if (inserted === 1) {
        await record(
          records,
          documents.map((document) => toOutbox(fromStored(document))),
        );
        // Parts this attempt stored carry its turn payload on the first (see `dropTurn`), the first its claim, the last its question.
        return withQuestion(
          claimed.map((document, index) => ({
            ...fromStored(document),
            ...(index === 0 && turn ? { turn } : {}),
            ...(index === 0 && claimFirst ? { claimedNow: true as const } : {}),
          })),
          question,
        );
      }
      // An earlier attempt stored this reply: what it stored wins.
      const stored = await replyParts(channel, replyTo);
      // Never an empty reply: a turn whose parts were lost is retried, not acknowledged unsent.
      if (stored.length === 0) throw new StorageWriteError(`the reply to ${replyTo} was not stored`);
      // Recorded by every attempt (an insert by `_id` is idempotent), so a crash between the two writes loses nothing.
      await record(records, stored.flatMap(partRecords));
      return stored;
    },
  };
}
