/**
 * The evaluation's help center as the service holds it: each page, FAQ entry and the PDF manual
 * cleaned, chunked and indexed by the service's own code (steering filter, `chunkText`, the PDF
 * extractor, `createKnowledgeIndex`), with a deterministic embedder's vectors when asked.
 */
import { chunkInput, packVector } from '../../../src/knowledge/embeddings.js';
import { chunkText } from '../../../src/knowledge/chunking.js';
import { extractPdf } from '../../../src/knowledge/extract.js';
import { createKnowledgeIndex, type KnowledgeIndex } from '../../../src/knowledge/knowledge-index.js';
import type { ChunkRecord, Passage } from '../../../src/knowledge/model.js';
import { dropSteering } from '../../../src/knowledge/steering.js';
import { stubEmbedding } from '../../support/embedding-stub.js';
import { FAQ, MANUAL, PAGES } from './help-center.js';
import { makePdf } from './pdf.js';

const DIMENSIONS = 256;
const EMBEDDING_LABEL = 'stub:bag-of-words';
export const embed = (text: string) => Float32Array.from(stubEmbedding(text, DIMENSIONS));

const SITE = 'https://help.veloria.example';

/** Every chunk of the help center, as the library would write them. */
export async function helpCenterChunks(): Promise<ChunkRecord[]> {
  const owners: { owner: string; title: string; url: string; text: string; language?: string }[] = [];
  for (const page of PAGES) {
    const text = Object.entries(page.sections)
      .map(([heading, body]) => (heading ? `## ${heading}\n\n${body}` : body))
      .join('\n\n');
    owners.push({ owner: `page:${page.id}`, title: page.title, url: `${SITE}/${page.lang}/${page.id}`, text, language: page.lang });
  }
  const pdf = await extractPdf(makePdf(MANUAL.pages));
  owners.push({ owner: `page:${MANUAL.id}`, title: MANUAL.file, url: `${SITE}/files/${MANUAL.file}`, text: pdf.text });
  FAQ.forEach(([question, answer], at) => owners.push({ owner: `doc:faq${at}`, title: question, url: '', text: `# ${question}\n\n${answer}` }));
  return owners.flatMap(({ owner, title, url, text, language }) =>
    chunkText(dropSteering(text).text, { owner, title, url, sites: [], ...(language ? { language } : {}) }),
  );
}

/** The index over those chunks (with the stub's vectors when `embeddings`). */
export async function helpCenterIndex(chunks: readonly ChunkRecord[], embeddings: boolean, options: { minCoverage?: number } = {}): Promise<KnowledgeIndex> {
  const index = await createKnowledgeIndex({ ...options, ...(embeddings ? { embeddingModel: EMBEDDING_LABEL } : {}) });
  await index.load(
    (async function* () {
      for (const chunk of chunks) yield embeddings ? { ...chunk, vector: packVector([...embed(chunkInput(chunk))]), embeddingModel: EMBEDDING_LABEL } : chunk;
    })(),
  );
  return index;
}

/** Whether a passage is one the label names (`page id`, `faq<n>`, `manual~<words it holds>`). */
export function answers(passage: Passage, label: string): boolean {
  const [id = '', words] = label.split('~');
  const owner = passage.chunkId.split('#')[0] ?? '';
  if (owner !== `page:${id}` && owner !== `doc:${id}`) return false;
  return words === undefined || passage.text.includes(words);
}

/** The labels of a question's answer field (`manual~Veloria T7` stays whole). */
export function labels(field: string): string[] {
  return field.match(/manual~\S+(?: [A-Z]\d+)?|\S+/g) ?? [];
}
