/**
 * An owner's decision on a suggestion, taken once: approving makes it a FAQ entry like any other
 * (`faq_<the suggestion's hex>`, the owner's edits over the draft, through the library so every
 * worker's index hears of it); a dismissed one is never used.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { KnowledgeLibrary } from './library.js';
import type { SuggestionRecord, SuggestionRecords, SuggestionStatus } from './suggestions-records.js';

export interface SuggestionEdits {
  question?: string | undefined;
  answer?: string | undefined;
  url?: string | undefined;
  sites?: string[] | undefined;
}

export type Decision<T> = { outcome: 'done'; value: T } | { outcome: 'unknown' } | { outcome: 'conflict'; reason: string };

const DECIDABLE = new Set<SuggestionStatus>(['pending', 'nothing', 'failed']);

export function createDecisions({
  records,
  library,
  logger,
  metrics,
}: {
  records: SuggestionRecords;
  library: KnowledgeLibrary;
  logger: Logger;
  metrics: Metrics;
}) {
  /** The suggestion if it can still be decided, or why not. */
  const decidable = async (id: string): Promise<{ record: SuggestionRecord } | Decision<never>> => {
    const record = await records.get(id);
    if (!record) return { outcome: 'unknown' };
    if (!DECIDABLE.has(record.status)) return { outcome: 'conflict', reason: `the suggestion is ${record.status}` };
    return { record };
  };
  const alreadyDecided = { outcome: 'conflict', reason: 'the suggestion was already decided' } as const;

  return {
    /** Makes it a FAQ entry (the owner's edits over the draft). */
    async approve(id: string, edits: SuggestionEdits = {}): Promise<Decision<{ faqId: string; chunks: number; question: string; answer: string }>> {
      const found = await decidable(id);
      if (!('record' in found)) return found;
      const question = edits.question ?? found.record.question;
      const answer = edits.answer ?? found.record.answer;
      if (!question || !answer) return { outcome: 'conflict', reason: 'the suggestion has no draft: give a question and an answer' };
      if (!(await records.decide(id, 'approved'))) return alreadyDecided;
      const faqId = id.replace(/^sug_/, 'faq_');
      const result = await library.put({
        ownerId: `doc:${faqId}`,
        kind: 'faq',
        title: question,
        url: edits.url ?? '',
        text: `# ${question}\n\n${answer}`,
        sites: edits.sites ?? [],
      });
      await records.update(id, { status: 'approved', question, answer, faqId, decidedAt: new Date() });
      metrics.increment('knowledge_suggestions_total', { outcome: 'approved' });
      logger.info('knowledge-suggestion-approved', { id, faqId, edited: edits.question !== undefined || edits.answer !== undefined, chunks: result.chunks });
      return { outcome: 'done', value: { faqId, chunks: result.chunks, question, answer } };
    },

    async dismiss(id: string): Promise<Decision<undefined>> {
      const found = await decidable(id);
      if (!('record' in found)) return found;
      if (!(await records.decide(id, 'dismissed'))) return alreadyDecided;
      await records.update(id, { status: 'dismissed', decidedAt: new Date() });
      metrics.increment('knowledge_suggestions_total', { outcome: 'dismissed' });
      logger.info('knowledge-suggestion-dismissed', { id });
      return { outcome: 'done', value: undefined };
    },
  };
}
