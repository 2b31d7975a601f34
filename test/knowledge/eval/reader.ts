/**
 * The evaluation's reader row: the path past the search, with a scripted reader in the reply
 * model's place. Each question's passages go into the system prompt's section as the service
 * writes it (`sourcesSection`); the scripted reader reads the numbered sources there and answers
 * `[sources: n]` naming the first one that holds the question's answer (the labels say which),
 * or `[sources: none]`; the service's own reading of the reply (`readerReply`) then makes what
 * the customer gets. Counted: answerable questions answered with a "Source:" line naming a right
 * passage, unanswerable questions declined (by the search, or by the reader), and replies that
 * would show the customer a verdict line (must be none).
 */
import { citedSources, sourcesSection } from '../../../src/knowledge/brief.js';
import type { KnowledgeIndex } from '../../../src/knowledge/knowledge-index.js';
import { readerReply } from '../../../src/orchestrator/answer-leg-reader.js';
import { answers, labels } from './corpus.js';
import { QUESTIONS } from './help-center.js';

export interface ReaderRow {
  answered: number;
  declined: number;
  bySearch: number;
  byReader: number;
  shownVerdicts: number;
}

export async function readerRow(index: KnowledgeIndex, judged: boolean): Promise<ReaderRow> {
  let answerable = 0;
  let unanswerable = 0;
  const counts = { answered: 0, declined: 0, bySearch: 0, byReader: 0, shownVerdicts: 0 };
  for (const [, question, terms, field] of QUESTIONS) {
    const wanted = labels(field);
    if (wanted.length > 0) answerable += 1;
    else unanswerable += 1;
    const found = await index.search(judged ? [terms, question] : [question], { channel: 'whatsapp' }, 5);
    if (found.length === 0) {
      if (wanted.length === 0) counts.bySearch += 1;
      continue;
    }
    // The reader reads the section as the model would: source n is the n-th block.
    const section = sourcesSection(found);
    const blocks = [...section.matchAll(/<source n="(\d+)">/g)].map((match) => Number(match[1]));
    const right = blocks.find((n) => wanted.some((label) => answers(found[n - 1]!, label)));
    const reply = right ? `[sources: ${right}]\nHere is what our help center says.` : '[sources: none]\nLet me guess!';
    const read = readerReply(reply, citedSources(found), { language: 'en', offerPerson: true, markdownLinks: false });
    const customerGets = read.sources ? `${read.text}\n\n${read.sources}` : read.text;
    if (/\[\s*sources?\s*:/i.test(customerGets) || customerGets.includes('guess')) counts.shownVerdicts += 1;
    const cited = right ? found[right - 1]! : undefined;
    if (wanted.length > 0 && !read.declined && cited && read.sources?.includes(cited.title)) counts.answered += 1;
    if (wanted.length === 0 && read.declined) counts.byReader += 1;
  }
  return {
    answered: counts.answered / Math.max(1, answerable),
    declined: (counts.bySearch + counts.byReader) / Math.max(1, unanswerable),
    bySearch: counts.bySearch / Math.max(1, unanswerable),
    byReader: counts.byReader / Math.max(1, unanswerable),
    shownVerdicts: counts.shownVerdicts,
  };
}
