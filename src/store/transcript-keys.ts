/**
 * The transcript layer's Redis keys: the hot copy of a conversation and its send ledger, and
 * the outbox that carries transcript records to MongoDB. Every Lua script touches keys of one
 * hash tag only (Redis Cluster): a conversation's record under `{conversationKey}`; a reply's
 * ledger entries under `{channel:inbound id}`, derived from the ledger key every caller holds
 * (`out:<channel>:<inbound>#<part>`); an earlier version's delivery id under its own; the outbox under `{outbox:…}`, its dead letters under their own.
 */
import { KEY_PREFIX } from '../redis.js';

export const transcriptKeys = {
  /** Hash: channel, address, displayName, createdAt, the bounded recent history (JSON), `customerAt`, `historyAt`; a feature's own fields named `<feature>:<field>`. */
  conversation: (conversationKey: string) => `${KEY_PREFIX}:tx:conv:{${conversationKey}}`,
  /**
   * Hash: one field per reply part (`0`, `1`, … and the apology's), JSON ledger entries (the last
   * part's holds the reply's one-shot `turn` payload until it is sent); `question` the answers to
   * tap; `turn` the payload of a reply an earlier version stored.
   */
  reply: (channel: string, replyTo: string) => `${KEY_PREFIX}:tx:reply:{${channel}:${replyTo}}`,
  /**
   * String: the ledger key a channel message id (Twilio's SID) was sent as, written by earlier
   * versions for each sent part (a status callback now names its part); read for their callbacks.
   */
  delivery: (channelMessageId: string) => `${KEY_PREFIX}:tx:delivery:{${channelMessageId}}`,
  /** Stream: transcript records waiting for MongoDB database `database` (consumer group `TRANSCRIPT_WRITER_GROUP`). */
  outbox: (database: string) => `${KEY_PREFIX}:tx:outbox:{outbox:${database}}`,
  /** Stream: outbox records set aside, unwritten (unreadable, or refused by MongoDB); fields entry, reason, error, r (or raw). */
  deadLetters: (database: string) => `${KEY_PREFIX}:tx:outbox-dead:{outbox-dead:${database}}`,
};

export const TRANSCRIPT_WRITER_GROUP = 'transcript-writer';

/** The conversation hash's field: when the customer last wrote, ms (what WhatsApp's 24-hour window counts from). */
export const CUSTOMER_AT_FIELD = 'customerAt';
/** The conversation hash's field: when its recent history was last written, ms (a turn's reply, the service's words, a teammate's message). */
export const HISTORY_AT_FIELD = 'historyAt';

/** A conversation nobody wrote to for this long leaves Redis (its transcript stays in MongoDB). */
export const CONVERSATION_TTL_SECONDS = 30 * 24 * 60 * 60;
/** A reply's ledger entries outlive its retries and Twilio's status callbacks. */
export const LEDGER_TTL_SECONDS = 14 * 24 * 60 * 60;
