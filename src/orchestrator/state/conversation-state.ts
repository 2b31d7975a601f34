/**
 * Per-conversation orchestrator state besides facts: the active-role pointer, a question the
 * assistant is waiting on (a pending interrupt bound to the run that asked it) and session
 * facts a channel tool set (e.g. the selected entity). Read together in one command at the
 * start of a turn, with the facts of the roles asked for (whichever the pointer or the judge
 * picks, no second read); cleared together in one command on a first turn or a reset.
 */
import type { RedisClient } from '../../redis.js';
import { z } from 'zod';
import { DECISION_TTL_SECONDS, stateKeys, STATE_TTL_SECONDS } from './keys.js';
import { parseFacts, type VersionedFacts } from './fact-store.js';

const PendingInterruptSchema = z.object({
  runId: z.string(),
  toolName: z.string(),
  question: z.string(),
  data: z.unknown(),
  attempts: z.number().int().nonnegative(),
  /** The question's language (ISO 639-1), when its tool said: the reply to a late answer is in it. */
  language: z.string().optional(),
  /**
   * The message (the last of its batch) whose turn asked it: only a later message answers it;
   * that batch's retry (its reply never stored) shows the question again, as it was asked.
   */
  askedIn: z.string().optional(),
  /** The role whose turn asked it (the reply that shows it again is that role's). */
  roleId: z.string().optional(),
  /** The answers it offered to tap, and until when (ms since the epoch): shown again with it. */
  choices: z.array(z.object({ id: z.string(), label: z.string() })).optional(),
  choicesExpireAt: z.number().optional(),
  /**
   * The message (the last of its batch) whose turn answered it: that batch's retry answers the
   * same way again (the answer's outcome is never lost); a later message finds it over.
   */
  answeredBy: z.string().optional(),
});
export type PendingInterrupt = z.infer<typeof PendingInterruptSchema>;

const SessionSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
export type SessionFacts = z.infer<typeof SessionSchema>;

export interface TurnStartState {
  activeRoleId: string | undefined;
  pending: PendingInterrupt | undefined;
  session: SessionFacts;
  /** The stored facts of each role asked for (EMPTY_FACTS when it has none). */
  facts: ReadonlyMap<string, VersionedFacts>;
}

function parse<T>(schema: z.ZodType<T>, raw: string | null | undefined): T | undefined {
  if (!raw) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export interface ConversationState {
  /** One MGET: the pointer, any pending question, the session facts and the facts of `factRoleIds`. */
  readTurnStart(conversationKey: string, factRoleIds?: readonly string[]): Promise<TurnStartState>;
  /** One DEL clearing every key the orchestrator keeps for the conversation. */
  reset(conversationKey: string, roleIds: readonly string[]): Promise<void>;
  setPending(conversationKey: string, pending: PendingInterrupt): Promise<void>;
  clearPending(conversationKey: string): Promise<void>;
  writeSession(conversationKey: string, session: SessionFacts): Promise<void>;
}

export function createConversationState(redis: RedisClient): ConversationState {
  return {
    async readTurnStart(conversationKey, factRoleIds = []) {
      const [role, pending, session, ...facts] = await redis.mget(
        stateKeys.activeRole(conversationKey),
        stateKeys.pending(conversationKey),
        stateKeys.session(conversationKey),
        ...factRoleIds.map((roleId) => stateKeys.facts(conversationKey, roleId)),
      );
      return {
        activeRoleId: role ?? undefined,
        pending: parse(PendingInterruptSchema, pending),
        session: parse(SessionSchema, session) ?? {},
        facts: new Map(factRoleIds.map((roleId, index) => [roleId, parseFacts(facts[index] ?? null)])),
      };
    },
    async reset(conversationKey, roleIds) {
      await redis.del(
        stateKeys.activeRole(conversationKey),
        stateKeys.pending(conversationKey),
        stateKeys.session(conversationKey),
        ...roleIds.map((roleId) => stateKeys.facts(conversationKey, roleId)),
      );
    },
    async setPending(conversationKey, pending) {
      await redis.set(stateKeys.pending(conversationKey), JSON.stringify(pending), 'EX', DECISION_TTL_SECONDS);
    },
    async clearPending(conversationKey) {
      await redis.del(stateKeys.pending(conversationKey));
    },
    async writeSession(conversationKey, session) {
      await redis.set(stateKeys.session(conversationKey), JSON.stringify(session), 'EX', STATE_TTL_SECONDS);
    },
  };
}
