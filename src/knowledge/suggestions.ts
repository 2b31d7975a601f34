/**
 * "Learned from your team": when a takeover in which a teammate answered ends, a FAQ entry is
 * drafted from the exchange in the background (personal data out, one FAST-tier call:
 * `suggestions-draft.ts`) and kept in `knowledge_suggestions` — never in the knowledge the
 * assistant answers from — until an owner approves it (optionally edited): then it becomes a
 * FAQ entry like any other (`faq_<the suggestion's hex>`, through the library, so every
 * worker's index hears of it). A dismissed one is never used. This module wires the records
 * (`suggestions-records.ts`: one per hand-off, one decision each), the drafting
 * (`suggestions-learn.ts`) and the owner's decisions (`suggestions-decide.ts`).
 */
import type { Connection } from 'mongoose';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ModelProvider } from '../model/provider.js';
import type { KnowledgeLibrary } from './library.js';
import { createDecisions } from './suggestions-decide.js';
import { createLearner, type DraftUsageRecorder } from './suggestions-learn.js';
import { createSuggestionRecords } from './suggestions-records.js';

export type { TeamExchange } from './suggestions-draft.js';
export type { DraftUsageRecorder } from './suggestions-learn.js';

export function createSuggestions(dependencies: {
  connection: Connection;
  library: KnowledgeLibrary;
  /** The model providers (built on first use); without them every suggestion is `failed` and can only be approved with an owner's own text. */
  models: (() => ModelProvider) | undefined;
  /** Meters each draft's model call (role `faq-suggestion`, the hand-off's channel). */
  usage?: DraftUsageRecorder | undefined;
  logger: Logger;
  metrics: Metrics;
}) {
  const records = createSuggestionRecords(dependencies.connection);
  const { fromTeam, close } = createLearner({ ...dependencies, records });
  return { fromTeam, get: records.get, list: records.list, ...createDecisions({ ...dependencies, records }), close };
}

export type Suggestions = ReturnType<typeof createSuggestions>;
