/**
 * "Learned from your team": when a takeover in which a teammate answered ends, a FAQ entry is
 * drafted from the exchange in the background (personal data out, one FAST-tier call:
 * `suggestions-draft.ts`) and kept in `knowledge_suggestions` — never in the knowledge the
 * assistant answers from — until an owner approves it (optionally edited): then it becomes a
 * FAQ entry like any other (`faq_<the suggestion's hex>`, through the library, so every
 * worker's index hears of it). A dismissed one is never used. One suggestion per hand-off
 * (`sug_<hash of its id>`, a unique insert), one decision per suggestion (a unique insert in
 * `knowledge_suggestion_decisions`: a conditional update is not atomic on FerretDB 1.x).
 */
import { createHash } from 'node:crypto';
import type { Connection, mongo } from 'mongoose';
import { errorText, isDuplicateKeyError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ModelProvider } from '../model/provider.js';
import type { KnowledgeLibrary } from './library.js';
import { draftSuggestion, exchangeText, type DraftCall, type TeamExchange } from './suggestions-draft.js';

export type { TeamExchange } from './suggestions-draft.js';

export const SUGGESTION_STATUSES = ['drafting', 'pending', 'nothing', 'failed', 'approved', 'dismissed'] as const;
export type SuggestionStatus = (typeof SUGGESTION_STATUSES)[number];

export interface SuggestionRecord {
  /** `sug_<16 hex of the hand-off id's hash>` */
  _id: string;
  handoffId: string;
  channel: string;
  /** drafting → pending (a draft) | nothing (no reusable answer) | failed (no model answered) → approved | dismissed */
  status: SuggestionStatus;
  question?: string | undefined;
  answer?: string | undefined;
  /** The exchange it was drafted from, personal data out (what the owner reviews). */
  exchange: string;
  faqId?: string | undefined;
  error?: string | undefined;
  createdAt: Date;
  updatedAt: Date;
  decidedAt?: Date | undefined;
}

export interface SuggestionEdits {
  question?: string | undefined;
  answer?: string | undefined;
  url?: string | undefined;
  sites?: string[] | undefined;
}

export type Decision<T> = { outcome: 'done'; value: T } | { outcome: 'unknown' } | { outcome: 'conflict'; reason: string };

const DECIDABLE = new Set<SuggestionStatus>(['pending', 'nothing', 'failed']);

/** The role a suggestion draft's model use is metered under (`/admin/usage`, the reports' model use). */
const DRAFT_ROLE = 'faq-suggestion';

/** Meters model calls as a turn's are (`UsageRecorder`). */
export type DraftUsageRecorder = (turn: { roleId: string; channelId: string; calls: readonly DraftCall[] }) => Promise<void>;

const suggestionIdOf = (handoffId: string) => `sug_${createHash('sha256').update(handoffId).digest('hex').slice(0, 16)}`;

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
  const { connection, library, logger, metrics } = dependencies;
  const records = () => connection.collection<SuggestionRecord>('knowledge_suggestions') as unknown as mongo.Collection<SuggestionRecord>;
  const decisions = () =>
    connection.collection<{ _id: string; decision: string; at: Date }>('knowledge_suggestion_decisions') as unknown as mongo.Collection<{
      _id: string;
      decision: string;
      at: Date;
    }>;
  const inFlight = new Set<Promise<void>>();
  const closing = new AbortController();
  let models: ModelProvider | undefined;

  const get = async (id: string) => (await records().findOne({ _id: id })) ?? undefined;
  const update = (id: string, fields: Partial<SuggestionRecord>) => records().updateOne({ _id: id }, { $set: { ...fields, updatedAt: new Date() } });

  const learn = async (exchange: TeamExchange) => {
    const id = suggestionIdOf(exchange.handoffId);
    const now = new Date();
    try {
      await records().insertOne({
        _id: id,
        handoffId: exchange.handoffId,
        channel: exchange.channel,
        status: 'drafting',
        exchange: exchangeText(exchange),
        createdAt: now,
        updatedAt: now,
      });
    } catch (error) {
      if (isDuplicateKeyError(error)) return; // this hand-off's suggestion exists (a retried end entry)
      throw error;
    }
    const calls: DraftCall[] = [];
    try {
      if (!dependencies.models) throw new Error('no model providers');
      models ??= dependencies.models();
      const draft = await draftSuggestion(models, exchange, logger, closing.signal, (call) => calls.push(call));
      await meter(exchange, calls);
      await update(id, draft ? { status: 'pending', ...draft } : { status: 'nothing' });
      metrics.increment('knowledge_suggestions_total', { outcome: draft ? 'drafted' : 'nothing' });
      logger.info('knowledge-suggestion-drafted', { id, handoffId: exchange.handoffId, reusable: draft !== undefined });
    } catch (error) {
      await update(id, { status: 'failed', error: errorText(error) });
      metrics.increment('knowledge_suggestions_total', { outcome: 'failed' });
      logger.warn('knowledge-suggestion-failed', { id, handoffId: exchange.handoffId, error });
    }
  };

  /** The draft's model calls, metered as a turn's are; a failure is logged, never the suggestion's. */
  const meter = async (exchange: TeamExchange, calls: readonly DraftCall[]) => {
    if (calls.length === 0 || !dependencies.usage) return;
    await dependencies
      .usage({ roleId: DRAFT_ROLE, channelId: exchange.channel, calls })
      .catch((error: unknown) => logger.warn('knowledge-suggestion-usage-failed', { handoffId: exchange.handoffId, error }));
  };

  /** Takes the decision once: false when it was already taken. */
  const decide = async (id: string, decision: 'approved' | 'dismissed') => {
    try {
      await decisions().insertOne({ _id: id, decision, at: new Date() });
      return true;
    } catch (error) {
      if (isDuplicateKeyError(error)) return false;
      throw error;
    }
  };

  return {
    /** The takeover's hook at a takeover's end: returns at once, the draft is made in the background. */
    fromTeam(exchange: TeamExchange): void {
      const running = learn(exchange)
        .catch((error: unknown) => logger.warn('knowledge-suggestion-failed', { handoffId: exchange.handoffId, error }))
        .finally(() => inFlight.delete(running));
      inFlight.add(running);
    },

    get,

    /** Newest first; `statuses` filters (the operator's listing, a scan: never near a turn). */
    async list(statuses: readonly SuggestionStatus[]): Promise<SuggestionRecord[]> {
      const all = await records().find({}).toArray();
      return all.filter((record) => statuses.includes(record.status)).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    },

    /** Makes it a FAQ entry (the owner's edits over the draft). */
    async approve(id: string, edits: SuggestionEdits = {}): Promise<Decision<{ faqId: string; chunks: number; question: string; answer: string }>> {
      const record = await get(id);
      if (!record) return { outcome: 'unknown' };
      if (!DECIDABLE.has(record.status)) return { outcome: 'conflict', reason: `the suggestion is ${record.status}` };
      const question = edits.question ?? record.question;
      const answer = edits.answer ?? record.answer;
      if (!question || !answer) return { outcome: 'conflict', reason: 'the suggestion has no draft: give a question and an answer' };
      if (!(await decide(id, 'approved'))) return { outcome: 'conflict', reason: 'the suggestion was already decided' };
      const faqId = id.replace(/^sug_/, 'faq_');
      const result = await library.put({
        ownerId: `doc:${faqId}`,
        kind: 'faq',
        title: question,
        url: edits.url ?? '',
        text: `# ${question}\n\n${answer}`,
        sites: edits.sites ?? [],
      });
      await update(id, { status: 'approved', question, answer, faqId, decidedAt: new Date() });
      metrics.increment('knowledge_suggestions_total', { outcome: 'approved' });
      logger.info('knowledge-suggestion-approved', { id, faqId, edited: edits.question !== undefined || edits.answer !== undefined, chunks: result.chunks });
      return { outcome: 'done', value: { faqId, chunks: result.chunks, question, answer } };
    },

    async dismiss(id: string): Promise<Decision<undefined>> {
      const record = await get(id);
      if (!record) return { outcome: 'unknown' };
      if (!DECIDABLE.has(record.status)) return { outcome: 'conflict', reason: `the suggestion is ${record.status}` };
      if (!(await decide(id, 'dismissed'))) return { outcome: 'conflict', reason: 'the suggestion was already decided' };
      await update(id, { status: 'dismissed', decidedAt: new Date() });
      metrics.increment('knowledge_suggestions_total', { outcome: 'dismissed' });
      logger.info('knowledge-suggestion-dismissed', { id });
      return { outcome: 'done', value: undefined };
    },

    /** Stops the drafts under way (each recorded `failed`: an owner may still approve it with their own text) and waits for them. */
    async close(): Promise<void> {
      closing.abort(new Error('the service is shutting down'));
      await Promise.all(inFlight);
    },
  };
}

export type Suggestions = ReturnType<typeof createSuggestions>;
