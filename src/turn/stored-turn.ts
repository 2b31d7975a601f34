/**
 * The post-turn step: what finishing a turn needs once its reply is out, stored with the reply's
 * first part, and the finish itself (post-turn and metering, once per reply).
 */
import { z } from 'zod';
import type { ChannelDefinition, TurnResult } from '../contracts/index.js';
import { formatIssues } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import type { Orchestrator } from '../orchestrator/run-turn.js';
import type { MessageRecord, TranscriptStore } from '../store/transcript-store.js';

/**
 * What finishing a turn needs once its reply is out, stored with the reply's first part: the
 * attempt that delivers the reply (a retry resuming the stored parts never ran the turn) takes
 * it and runs post-turn, metering and the knowledge miss once.
 */
const StoredTurnSchema = z.object({
  roleId: z.string(),
  usage: z
    .array(
      z.object({
        purpose: z.enum(['judge', 'reply', 'vision']),
        tier: z.enum(['fast', 'smart', 'vision']),
        model: z.string(),
        inputTokens: z.number(),
        outputTokens: z.number(),
      }),
    )
    .optional(),
  postTurn: z
    .object({
      conversationId: z.string(),
      roleId: z.string(),
      facts: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      factsVersion: z.number(),
      degraded: z.boolean(),
      offeredTools: z.array(z.string()),
      toolCalls: z.array(z.object({ toolName: z.string(), input: z.unknown(), output: z.unknown(), isError: z.boolean() })),
      replyText: z.string(),
      channelId: z.string(),
    })
    .optional(),
  knowledgeMiss: z
    .object({
      role: z.string(),
      question: z.string(),
      terms: z.string().optional(),
      site: z.string().optional(),
      channel: z.string(),
      messageKey: z.string(),
    })
    .optional(),
});

export function storedTurn(result: TurnResult): string {
  const { roleId, usage, postTurn, knowledgeMiss } = result;
  return JSON.stringify({ roleId, ...(usage ? { usage } : {}), ...(postTurn ? { postTurn } : {}), ...(knowledgeMiss ? { knowledgeMiss } : {}) });
}

/** Finishes the turn a reply's parts hold (see `createTurnFinisher`). */
export type TurnFinisher = ReturnType<typeof createTurnFinisher>;

export function createTurnFinisher(transcripts: TranscriptStore, orchestrator: Pick<Orchestrator, 'finishTurn'>) {
  /**
   * Runs post-turn and metering for the reply these parts hold, if no attempt has yet (`taken`:
   * this attempt took the turn already, with its last part's sent mark). `ran`: the turn this
   * attempt ran, whose payload the parts it stored carry (finished from memory, not parsed back).
   */
  return async (channel: ChannelDefinition, parts: readonly MessageRecord[], delivered: boolean, logger: Logger, taken = false, ran?: TurnResult) => {
    const first = parts[0];
    // Parts this attempt stored carry their turn: taken (unless the last part's sent mark took it) without parsing it back.
    const raw = !first
      ? undefined
      : first.turn !== undefined
        ? taken || (await transcripts.dropTurn(first._id))
          ? first.turn
          : undefined
        : await transcripts.takeTurn(first._id);
    if (raw === undefined) return;
    if (ran && first?.turn !== undefined) {
      await orchestrator.finishTurn(channel, ran, delivered);
      return;
    }
    let parsed: ReturnType<typeof StoredTurnSchema.safeParse>;
    try {
      parsed = StoredTurnSchema.safeParse(JSON.parse(raw));
    } catch (error) {
      logger.error('stored-turn-unreadable', { error });
      return;
    }
    if (!parsed.success) {
      logger.error('stored-turn-unreadable', { issues: formatIssues(parsed.error.issues, '(turn)') });
      return;
    }
    await orchestrator.finishTurn(channel, parsed.data, delivered);
  };
}
