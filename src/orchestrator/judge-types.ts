/**
 * The judge's contract: what a turn gives it (the roster, recent history, the tools to rank, the
 * hooks that widen the judgment), what it returns, and what it runs on (the fast tier's models,
 * the breakers, the meter); and the caps that keep its prompt bounded.
 */
import type { ModelMessage } from 'ai';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import type { ModelProvider, ModelTier } from '../model/provider.js';
import type { Facts, RoleDefinition } from '../contracts/index.js';
import type { CircuitBreaker } from './circuit-breaker.js';
import type { ModelCallObserver } from './metering.js';
import type { ModelOutages } from './model-outages.js';
import type { JudgedEntry } from './turn-guidance.js';

/** Caps that keep the judge's prompt bounded whatever the roster or catalogue size. */
export const JUDGE_LIMITS = {
  roles: 32,
  descriptionChars: 240,
  factsPerRole: 6,
  questionChars: 160,
  contextMessages: 6,
  contextMessageChars: 600,
  toolDescriptionChars: 100,
} as const;

export interface ToolCandidate {
  name: string;
  description: string;
}

export interface JudgeInput {
  roles: readonly RoleDefinition[];
  history: readonly ModelMessage[];
  activeRoleId: string | undefined;
  activeFacts: Facts;
  /** Tools to rank; empty when there are too few candidates to need ranking. */
  candidates: readonly ToolCandidate[];
  /** The business's published knowledge is configured: the judgment also says whether this turn needs it, and its search terms. */
  knowledge?: boolean;
  /** The customer was just asked for a comment on the service (`TurnFeedback`): the judgment also says whether the latest message is only that. */
  feedback?: boolean;
  /** The business's escalation guidance in scope (bounded at publish): the judgment also says which entries apply. */
  guidance?: readonly JudgedEntry[];
  signal: AbortSignal;
}

export interface Judgment {
  roleId: string;
  tier: ModelTier;
  inScope: boolean;
  rankedTools: string[];
  /** Facts the routed role learned this turn (keys without the namespace). */
  learned: Facts;
  /** With `JudgeInput.knowledge`: whether the turn needs the business's knowledge, and the terms to search it for. */
  knowledge?: { needed: boolean; terms: string };
  /** With `JudgeInput.feedback`: the latest message is only a comment on the service, nothing to answer or do. */
  feedbackOnly?: boolean;
  /** With `JudgeInput.guidance`: the ids of the entries that apply to the latest message. */
  guidance?: string[];
  /** The merged call failed or was skipped. */
  degraded: boolean;
  modelCalls: number;
}

export interface JudgeDependencies {
  /** The fast tier's list: each structured call falls over along it. */
  models: ModelProvider;
  /** The per-provider breakers shared through Redis (absent: none). */
  breakers: ProviderBreakers | undefined;
  /** The process's outage lines: while a provider is out, a failed judgment is a debug line. */
  outages?: ModelOutages | undefined;
  /** The merged judgment's own (per-process) breaker: open, it goes straight to the route fallback. */
  breaker: CircuitBreaker;
  logger: Logger;
  metrics: Metrics;
  timeoutMs: number;
  /** Told each call's time and token usage (the turn's meter). */
  onModelCall?: ModelCallObserver;
}
