/** The business's help pages, documents and FAQ (src/knowledge/): its variables and its slice of Config. */
import { z } from 'zod';
import { jsonText, positiveInt } from './fields.js';

const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);
/** A crawl sends no credentials and reads plain http only from a loopback test server: such a URL is refused, never added to crawl nothing. */
const knowledgeUrl = z
  .url({ protocol: /^https?$/, error: 'expected an http(s) URL' })
  .refine((value) => !/^[a-z]+:\/\/[^/?#]*@/i.test(value), 'a source URL cannot carry a user name or password: the crawl sends none')
  .refine(
    (value) => URL.parse(value)?.protocol !== 'http:' || LOOPBACK_HOSTNAMES.has(URL.parse(value)?.hostname ?? ''),
    'expected https: plain http is read from a loopback test server only',
  );

/** One website to crawl, as KNOWLEDGE_SOURCES and `POST /admin/knowledge/sources` take it. */
export const KnowledgeSourceSchema = z.strictObject({
  url: knowledgeUrl,
  sitemap: knowledgeUrl.optional(),
  include: z.array(z.string().min(1).max(200)).max(50).optional(),
  exclude: z.array(z.string().min(1).max(200)).max(50).optional(),
  /** Widget site keys and/or channel ids (`whatsapp`) answered from it; absent: everyone. */
  sites: z.array(z.string().trim().min(1).max(80)).max(20).optional(),
  language: z.string().trim().min(2).max(10).optional(),
});

export const knowledgeFields = {
  KNOWLEDGE_SOURCES: jsonText()
    .pipe(
      z
        .array(KnowledgeSourceSchema, { error: 'expected a JSON list of {"url": "https://…", "sitemap"?, "include"?, "exclude"?, "sites"?, "language"?}' })
        .max(50),
    )
    .optional(),
  KNOWLEDGE_RECRAWL_HOURS: positiveInt(24),
  KNOWLEDGE_MAX_PAGES: positiveInt(500),
  KNOWLEDGE_MAX_DEPTH: z.coerce.number({ error: 'expected 0–20' }).int().min(0).max(20).default(5),
  KNOWLEDGE_MAX_PAGE_BYTES: positiveInt(5 * 1024 * 1024),
  KNOWLEDGE_MAX_CRAWL_BYTES: positiveInt(200 * 1024 * 1024),
  KNOWLEDGE_FETCH_TIMEOUT_MS: positiveInt(15_000),
  KNOWLEDGE_MAX_DOCUMENT_BYTES: positiveInt(10 * 1024 * 1024),
  KNOWLEDGE_MAX_PASSAGES: z.coerce.number({ error: 'expected 1–5' }).int().min(1).max(5).default(5),
  KNOWLEDGE_MAX_PASSAGE_TOKENS: positiveInt(1500),
};

export interface KnowledgeConfig {
  sources: z.infer<typeof KnowledgeSourceSchema>[];
  recrawlHours: number;
  crawl: { maxPages: number; maxDepth: number; maxPageBytes: number; maxCrawlBytes: number; timeoutMs: number };
  maxDocumentBytes: number;
  maxPassages: number;
  maxPassageTokens: number;
}

type KnowledgeEnv = z.infer<z.ZodObject<typeof knowledgeFields>>;

export function knowledgeConfig(env: KnowledgeEnv): KnowledgeConfig {
  return {
    sources: env.KNOWLEDGE_SOURCES ?? [],
    recrawlHours: env.KNOWLEDGE_RECRAWL_HOURS,
    crawl: {
      maxPages: env.KNOWLEDGE_MAX_PAGES,
      maxDepth: env.KNOWLEDGE_MAX_DEPTH,
      maxPageBytes: env.KNOWLEDGE_MAX_PAGE_BYTES,
      maxCrawlBytes: env.KNOWLEDGE_MAX_CRAWL_BYTES,
      timeoutMs: env.KNOWLEDGE_FETCH_TIMEOUT_MS,
    },
    maxDocumentBytes: env.KNOWLEDGE_MAX_DOCUMENT_BYTES,
    maxPassages: env.KNOWLEDGE_MAX_PASSAGES,
    maxPassageTokens: env.KNOWLEDGE_MAX_PASSAGE_TOKENS,
  };
}
