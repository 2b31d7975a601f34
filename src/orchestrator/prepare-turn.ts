/**
 * Everything a fresh leg decides before its model runs, within the Redis budget (≤ 7 commands
 * before the model, 1 read before the judge in steady state):
 *   first turn: one DEL of the conversation's state      | otherwise: one MGET of pointer+pending+
 *                                                          session and every role's facts
 *   judge (1–3 model calls) → (a role's facts the MGET did not read: one GET)
 *   → one CAS EVAL when the judgment learned something → SET the pointer if the route changed
 *   → SET the leg's decision.
 */
import type { ModelMessage } from 'ai';
import { offerTools } from '../tools/offer.js';
import { shortlistTools } from '../tools/shortlist.js';
import { toolIsInScope, type AssistantTool, type SessionFacts } from '../contracts/tool.js';
import type { Facts, KnowledgeMissNote, RoleDefinition } from '../contracts/index.js';
import { messageText } from './history.js';
import { defaultRole, extractFacts, judgeTurn, type JudgeDependencies, type ToolCandidate } from './judge.js';
import { MAX_TURN_TOOLS } from '../tools/offer.js';
import type { ConversationState } from './state/conversation-state.js';
import type { DecisionStore, StoredDecision } from './state/decision-store.js';
import { EMPTY_FACTS, type FactStore, type VersionedFacts } from './state/fact-store.js';
import { guideLeg, type GuidanceAudience, type GuidedLeg, type TurnGuidance } from './turn-guidance.js';

export interface PreparedLeg {
  decision: StoredDecision;
  role: RoleDefinition;
  offered: AssistantTool[];
  session: SessionFacts;
  modelCalls: number;
  /** The business's published content for this turn (or what to say without it), for the system prompt, and its miss. */
  knowledge?: KnowledgeBrief | undefined;
  /** The judge read the latest message as only a comment on the service (asked with `feedback`). */
  feedbackOnly?: boolean;
  /** The business's guidance for the routed role: its section, the entries quoted, those the judge found applying. */
  guidance?: GuidedLeg | undefined;
  /** The active-role pointer's write when the routed role is new to it: sent before the reply is asked for, its outcome awaited once the leg is answered. */
  pointerWritten?: Promise<void>;
}

/**
 * A turn's knowledge: the system prompt's section (numbered, quoted passages and how the reply
 * states whether they answer and which it used; or, when none was found, what to say instead),
 * the passages it numbers, and the miss the turn carries to its finish (nothing found, or the
 * reply model found the passages do not answer).
 */
export interface KnowledgeBrief {
  section: string;
  /** The passages the section numbers, in order (what `[sources: n]` names); empty when none was found. */
  sources: readonly { title: string; url: string }[];
  /** The turn's question as a miss, should the turn miss: recorded when the turn is finished (in its usage entry, or by `TurnKnowledge.recordMiss`). */
  miss: KnowledgeMissNote;
}

/**
 * The business's published knowledge (src/knowledge/), when configured: for a turn the judge
 * marks as needing it, the brief of numbered, quoted sources, or the words to use when nothing
 * relevant was found. In-process: no model call, no Redis command on orchestrator state (a miss
 * is carried by the turn's result and recorded with its finish, once per reply).
 */
export interface TurnKnowledge {
  /** Whether there is anything to search (the index built and holding a passage): without it the turn has no knowledge step. */
  hasContent(): boolean;
  brief(input: {
    /** The customer's latest message (what a miss lists). */
    question: string;
    /** The channel's id of the batch's latest message: a miss is recorded once per message, however often its turn runs. */
    messageId: string;
    /** The judge's search terms (empty: search the question). */
    terms: string;
    roleId: string;
    channel: string;
    /** The channel's report (a widget's `siteKey`, the visitor's `language`): who the content may be for. */
    metadata: Readonly<Record<string, string>>;
    /** Passages only: nothing (no "I don't know", no miss) when none is found — a turn nobody judged as needing knowledge. */
    hitsOnly?: boolean;
  }): Promise<KnowledgeBrief | undefined>;
  /**
   * Lists and counts a miss at once; never throws. Called with the turn's finish when no usage
   * store carries the miss in the turn's entry (the fold lists those), once per reply: a turn run
   * again for the same message (a retry, a restart) records nothing more.
   */
  recordMiss(miss: KnowledgeMissNote): Promise<void>;
}

export interface PrepareDependencies {
  roles: readonly RoleDefinition[];
  facts: FactStore;
  state: ConversationState;
  decisions: DecisionStore;
  judge: JudgeDependencies;
}

function judgeCandidates(roles: readonly RoleDefinition[], catalogue: readonly AssistantTool[], text: string): ToolCandidate[] {
  const inAnyScope = catalogue.filter((tool) => roles.some((role) => toolIsInScope(tool, role.toolScope)));
  if (inAnyScope.length <= MAX_TURN_TOOLS) return [];
  return shortlistTools(inAnyScope, text).map((tool) => ({ name: tool.name, description: tool.description }));
}

export async function prepareFreshLeg(
  dependencies: PrepareDependencies,
  input: {
    conversationId: string;
    runId: string;
    firstTurn: boolean;
    activeRoleId: string | undefined;
    session: SessionFacts;
    history: readonly ModelMessage[];
    channelTools: readonly AssistantTool[];
    mcpTools: readonly AssistantTool[];
    signal: AbortSignal;
    /** Roles' facts the turn-start MGET already read (a role missing here is read with a GET). */
    knownFacts?: ReadonlyMap<string, VersionedFacts> | undefined;
    /** The business's knowledge, when configured, and where the turn is answered (for its audience). */
    knowledge?: { hook: TurnKnowledge | undefined; channel: string; messageId: string; metadata: Readonly<Record<string, string>> };
    /** The customer was just asked for a comment on the service: the judge says whether the latest message is only that. */
    feedback?: boolean;
    /** The business's guidance, and where and to whom the turn is answered. */
    guidance?: { hook: TurnGuidance; audience: GuidanceAudience } | undefined;
  },
): Promise<PreparedLeg> {
  const { roles, facts } = dependencies;
  const byId = new Map(roles.map((role) => [role.id, role]));
  const factsOf = async (role: RoleDefinition): Promise<VersionedFacts> =>
    role.facts && !input.firstTurn ? (input.knownFacts?.get(role.id) ?? (await facts.read(input.conversationId, role.id))) : EMPTY_FACTS;
  const pointerRole = input.activeRoleId ? byId.get(input.activeRoleId) : undefined;
  const pointerFacts: VersionedFacts = pointerRole ? await factsOf(pointerRole) : EMPTY_FACTS;

  const latestText = input.history
    .filter((message) => message.role === 'user')
    .slice(-2)
    .map(messageText)
    .join(' ');
  // No source, document or FAQ: the judge is not asked about knowledge, and nothing is searched.
  const knowledgeOn = input.knowledge?.hook?.hasContent() === true;
  const judgedGuidance = input.guidance?.hook.judged(input.guidance.audience) ?? [];
  const judgment = await judgeTurn(dependencies.judge, {
    roles,
    history: input.history,
    activeRoleId: pointerRole?.id,
    activeFacts: pointerFacts.facts,
    candidates: judgeCandidates(roles, [...input.channelTools, ...input.mcpTools], latestText),
    ...(knowledgeOn ? { knowledge: true } : {}),
    ...(input.feedback ? { feedback: true } : {}),
    ...(judgedGuidance.length > 0 ? { guidance: judgedGuidance } : {}),
    signal: input.signal,
  });
  const role = byId.get(judgment.roleId) ?? defaultRole(roles);
  let modelCalls = judgment.modelCalls;

  let routed: VersionedFacts = role.id === pointerRole?.id ? pointerFacts : await factsOf(role);
  let learned: Facts = judgment.learned;
  if (judgment.degraded && role.factFallback && role.facts) {
    modelCalls += 1;
    try {
      learned = await extractFacts(dependencies.judge, role, input.history, input.signal);
    } catch (error) {
      if (input.signal.aborted) throw error;
      dependencies.judge.logger.warn('fact-fallback-failed', { roleId: role.id, error });
    }
  }
  if (Object.keys(learned).length > 0) routed = await facts.remember(input.conversationId, role.id, learned, routed);

  const offered = offerTools({
    role,
    channelTools: input.channelTools,
    mcpTools: input.mcpTools,
    rankedNames: judgment.rankedTools,
  });
  // A degraded judgment says nothing of knowledge: the customer's own words are searched, and only a hit is told.
  const knowledge = !knowledgeOn
    ? undefined
    : judgment.knowledge?.needed
      ? await knowledgeBrief(dependencies.judge.logger, input, judgment.knowledge.terms, role.id)
      : judgment.degraded
        ? await knowledgeBrief(dependencies.judge.logger, input, '', role.id, true)
        : undefined;
  const guidance = guideLeg(input.guidance?.hook, input.guidance?.audience, role.id, judgment.guidance, (event, fields) =>
    dependencies.judge.logger.warn(event, fields),
  );
  const decision: StoredDecision = {
    runId: input.runId,
    roleId: role.id,
    tier: judgment.tier,
    inScope: judgment.inScope,
    degraded: judgment.degraded,
    facts: routed.facts,
    factsVersion: routed.version,
    offeredTools: offered.map((tool) => tool.name),
  };
  // Kept here; stored in Redis only if the leg leaves a question (`answer-leg.ts`): only its answer continues the leg.
  dependencies.decisions.keep(input.conversationId, decision);
  // Not waited on before the reply is asked for (one round trip fewer before it): the turn awaits
  // its outcome before it ends (`run-turn.ts`), so a failed write still fails the turn before its
  // reply is stored, and the same connection runs it before anything the leg writes later.
  const pointerWritten = role.id !== input.activeRoleId ? facts.writeActiveRole(input.conversationId, role.id) : undefined;
  // Awaited by the turn; a turn that fails before it does must not leave an unhandled rejection behind.
  pointerWritten?.catch(() => undefined);
  return {
    ...(pointerWritten ? { pointerWritten } : {}),
    decision,
    role,
    offered,
    session: input.session,
    modelCalls,
    ...(knowledge ? { knowledge } : {}),
    ...(judgment.feedbackOnly === true ? { feedbackOnly: true } : {}),
    ...(guidance ? { guidance } : {}),
  };
}

/** The knowledge section for a turn that needs it; a failure leaves it out (logged), never fails the turn. */
async function knowledgeBrief(
  logger: JudgeDependencies['logger'],
  input: {
    history: readonly ModelMessage[];
    knowledge?: { hook: TurnKnowledge | undefined; channel: string; messageId: string; metadata: Readonly<Record<string, string>> };
  },
  terms: string,
  roleId: string,
  hitsOnly = false,
): Promise<KnowledgeBrief | undefined> {
  const knowledge = input.knowledge;
  if (!knowledge?.hook) return undefined;
  const question = messageText(input.history.filter((message) => message.role === 'user').at(-1) ?? { role: 'user', content: '' });
  try {
    return await knowledge.hook.brief({
      question,
      terms,
      roleId,
      channel: knowledge.channel,
      messageId: knowledge.messageId,
      metadata: knowledge.metadata,
      ...(hitsOnly ? { hitsOnly } : {}),
    });
  } catch (error) {
    logger.warn('knowledge-brief-failed', { roleId, error });
    return undefined;
  }
}
