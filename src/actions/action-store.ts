/**
 * A confirmed action's state in Redis: one hash per action under the conversation's hash tag
 * (`state` and the whole `record`), moved only by compare-and-set on `state`, so each step of
 * `proposed → confirmed → running → done | failed` (or `cancelled` / `expired`) happens once
 * whoever races for it. Every step it takes is also appended to the transcript outbox (an
 * `action` record, idempotent by `_id`), which puts the action in MongoDB off the hot path.
 *
 * A per-conversation index (a sorted set, same hash tag) lists the conversation's actions for
 * the transcript page.
 *
 * Must never let a step happen from a state it does not follow, and never keep an action past
 * its retention: the keys expire `ACTION_RETENTION_SECONDS` after it was proposed.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';
import type { TranscriptOutbox } from '../store/outbox.js';
import { LANGUAGES } from '../words/language.js';

export const ACTION_STATES = ['proposed', 'confirmed', 'running', 'done', 'failed', 'cancelled', 'expired'] as const;
export type ActionState = (typeof ACTION_STATES)[number];

/** How long an action's state stays in Redis after it was proposed (the record stays in MongoDB). */
const ACTION_RETENTION_SECONDS = 24 * 60 * 60;

const Iso = z.iso.datetime();

export const ActionRecordSchema = z.object({
  _id: z.string(),
  conversationId: z.string(),
  channel: z.string(),
  tool: z.string(),
  title: z.string(),
  effect: z.enum(['reversible', 'irreversible']),
  /** The frozen arguments the tool runs with: scoped ones from the verified caller. */
  args: z.record(z.string(), z.unknown()),
  /** What the customer was shown (rendered by the service, never by the model). */
  summary: z.string(),
  state: z.enum(ACTION_STATES),
  proposedBy: z.object({ address: z.string(), customerId: z.string().optional(), entityId: z.string().optional(), roleId: z.string(), runId: z.string() }),
  confirmedBy: z.object({ address: z.string(), via: z.enum(['customer', 'teammate']), name: z.string().optional() }).optional(),
  /** Who may confirm it: the customer (default), or a teammate (an irreversible write not opted in). */
  confirmer: z.enum(['customer', 'teammate']).optional(),
  /** The customer's language (the service's words to them), when not English. */
  language: z.enum(LANGUAGES).optional(),
  /** Why it ended without running (`declined`, `superseded`, `forged-choice`…). */
  reason: z.string().optional(),
  result: z.unknown().optional(),
  error: z.string().optional(),
  /** Calls made to the MCP server (more than one only when an outcome was lost and resolved). */
  calls: z.number().int().nonnegative(),
  /** While `running`: until when the attempt that runs it holds it (another caller resolves it only after; released sooner only by the server's answer). */
  leaseUntil: Iso.optional(),
  createdAt: Iso,
  expiresAt: Iso,
  updatedAt: Iso,
});
export type ActionRecord = z.infer<typeof ActionRecordSchema>;

export const actionKey = (conversationKey: string, actionId: string) => `${KEY_PREFIX}:action:{${conversationKey}}:${actionId}`;
/** The conversation's actions by when they were proposed (what the transcript page lists); same retention. */
const actionIndexKey = (conversationKey: string) => `${KEY_PREFIX}:actions:{${conversationKey}}`;
/** The most a conversation's index keeps (the oldest are dropped; their records stay in MongoDB). */
const INDEX_LIMIT = 50;
/** The conversation's changes that ran, by fingerprint (tool and frozen arguments): when each was done. */
const doneKey = (conversationKey: string) => `${KEY_PREFIX}:actions-done:{${conversationKey}}`;
/**
 * Every conversation's actions waiting on time: a proposal's expiry, a run's lease. One key for
 * the deployment (never in a script with a conversation's keys); the sweeper reads it.
 */
const dueKey = `${KEY_PREFIX}:actions-due`;
const dueMember = (conversationKey: string, actionId: string) => `${actionId} ${conversationKey}`;

/** What a change is, whoever proposed it when: its tool and frozen arguments (object keys sorted). */
function actionFingerprint(record: Pick<ActionRecord, 'tool' | 'args'>): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(
            Object.entries(value)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([key, entry]) => [key, canonical(entry)]),
          )
        : value;
  return createHash('sha256')
    .update(JSON.stringify([record.tool, canonical(record.args)]))
    .digest('base64url');
}

// KEYS[1] the action, KEYS[2] the conversation's done changes; ARGV: the states it may move from
// (space separated), the new state, the new record, its stamp, the stamp it must still have ('':
// any), the change's fingerprint (noted with its time when it moves to `done`), the TTL (s).
const transitionScript = luaScript(`
local current = redis.call('HGET', KEYS[1], 'state')
if not current then return false end
if ARGV[5] ~= '' then
  local stamp = redis.call('HGET', KEYS[1], 'stamp')
  if stamp and stamp ~= ARGV[5] then return current end
end
for state in string.gmatch(ARGV[1], '%S+') do
  if state == current then
    redis.call('HSET', KEYS[1], 'state', ARGV[2], 'record', ARGV[3], 'stamp', ARGV[4])
    if ARGV[2] == 'done' and ARGV[6] ~= '' then
      redis.call('HSET', KEYS[2], ARGV[6], ARGV[4])
      redis.call('EXPIRE', KEYS[2], ARGV[7])
    end
    return 'ok'
  end
end
return current
`);

// KEYS[1] the action, KEYS[2] the conversation's index; ARGV: the record, its TTL, when it was
// proposed (ms), its id, the index's limit, its stamp. Only when it does not exist yet.
const createScript = luaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'proposed', 'record', ARGV[1], 'stamp', ARGV[6])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[5]) - 1)
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
`);

export interface ActionStore {
  create(conversationKey: string, record: ActionRecord): Promise<void>;
  get(conversationKey: string, actionId: string): Promise<ActionRecord | undefined>;
  /** The conversation's actions still held in Redis, oldest first (the transcript page; never a turn's path). */
  ofConversation(conversationKey: string): Promise<ActionRecord[]>;
  /**
   * Moves the action from one of `from` to `record.state`, storing `record` (its `updatedAt` is
   * its new stamp); with `stamp`, only while the stored record still has that `updatedAt` (one
   * caller at a time takes a run over). Returns whether it moved, or the state it is in instead.
   */
  transition(
    conversationKey: string,
    from: readonly ActionState[],
    record: ActionRecord,
    stamp?: string,
  ): Promise<{ moved: true } | { moved: false; state: string | undefined }>;
  /** When the same change (tool and frozen arguments) was last done in this conversation (ISO time), within the retention. */
  doneBefore(conversationKey: string, record: Pick<ActionRecord, 'tool' | 'args'>): Promise<string | undefined>;
  /** Notes (or moves) when the sweeper should look at an action next (ms since the epoch). */
  due(conversationKey: string, actionId: string, at: number): Promise<void>;
  /** Actions due by `now`, at most `limit`. */
  dueBy(now: number, limit: number): Promise<{ conversationKey: string; actionId: string }[]>;
  /** Takes an action off the sweeper's list (it has ended). */
  undue(conversationKey: string, actionId: string): Promise<void>;
}

export function createActionStore(redis: RedisClient, outbox: Pick<TranscriptOutbox, 'append'>): ActionStore {
  const recordIt = (record: ActionRecord) => outbox.append([{ kind: 'action', action: record }]);
  const parse = (raw: string | null): ActionRecord | undefined => {
    if (raw === null) return undefined;
    try {
      const parsed = ActionRecordSchema.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    async create(conversationKey, record) {
      const created = await createScript(
        redis,
        [actionKey(conversationKey, record._id), actionIndexKey(conversationKey)],
        [JSON.stringify(record), ACTION_RETENTION_SECONDS, Date.parse(record.createdAt), record._id, INDEX_LIMIT, record.updatedAt],
      );
      if (Number(created) === 1) await recordIt(record);
    },
    async get(conversationKey, actionId) {
      return parse(await redis.hget(actionKey(conversationKey, actionId), 'record'));
    },
    async ofConversation(conversationKey) {
      const ids = await redis.zrange(actionIndexKey(conversationKey), '0', '-1');
      if (ids.length === 0) return [];
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hget(actionKey(conversationKey, id), 'record');
      const results = (await pipeline.exec()) ?? [];
      return results.map(([, raw]) => parse(typeof raw === 'string' ? raw : null)).filter((record): record is ActionRecord => record !== undefined);
    },
    async transition(conversationKey, from, record, stamp) {
      const outcome = await transitionScript(
        redis,
        [actionKey(conversationKey, record._id), doneKey(conversationKey)],
        [from.join(' '), record.state, JSON.stringify(record), record.updatedAt, stamp ?? '', actionFingerprint(record), ACTION_RETENTION_SECONDS],
      );
      if (outcome === 'ok') {
        await recordIt(record);
        return { moved: true };
      }
      return { moved: false, state: typeof outcome === 'string' ? outcome : undefined };
    },
    async doneBefore(conversationKey, record) {
      const at = await redis.hget(doneKey(conversationKey), actionFingerprint(record));
      return at && Date.parse(at) > Date.now() - ACTION_RETENTION_SECONDS * 1000 ? at : undefined;
    },
    async due(conversationKey, actionId, at) {
      await redis.zadd(dueKey, at, dueMember(conversationKey, actionId));
    },
    async dueBy(now, limit) {
      const members = await redis.zrangebyscore(dueKey, '-inf', now, 'LIMIT', 0, limit);
      return members.flatMap((member) => {
        const space = member.indexOf(' ');
        return space > 0 ? [{ actionId: member.slice(0, space), conversationKey: member.slice(space + 1) }] : [];
      });
    },
    async undue(conversationKey, actionId) {
      await redis.zrem(dueKey, dueMember(conversationKey, actionId));
    },
  };
}
