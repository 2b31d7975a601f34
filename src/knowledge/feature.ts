/**
 * The knowledge feature as one factory: the business's help pages, documents and FAQ, cited in
 * the turns that need them. It hands the rest of the service
 *   - `router`: the operator API under `/admin/knowledge` (the admin bearer token);
 *   - `tools()`: the `search_knowledge` read (category `knowledge`, public), for the MCP reads' list;
 *   - `turn`: the orchestrator's `knowledge` hook (the brief section of a turn the judge marks);
 *   - `retrieve(query, { site, channel, terms })`;
 *   - `start()`: builds this process's index from MongoDB in the background (retried until it
 *     succeeds; `ready()` resolves then), follows the change stream, checks its index against
 *     MongoDB every minute (`index-sync.ts`), registers the configured sources and re-crawls each
 *     every `recrawlHours`; `close()`.
 * Until the index is built a turn gets no knowledge section (never a false "I don't know").
 */
import type { Router } from 'express';
import type { Connection } from 'mongoose';
import type { Config, KnowledgeConfig } from '../config.js';
import type { AssistantTool } from '../contracts/tool.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { createConfiguredModelProvider, type ModelProvider } from '../model/provider.js';
import type { TurnKnowledge } from '../orchestrator/prepare-turn.js';
import type { RedisClient } from '../redis.js';
import { createKnowledgeRouter } from './admin.js';
import { citedSources, fitPassages, missSection, sourcesSection } from './brief.js';
import { customerLanguage } from '../words/text-language.js';
import { followChanges, streamPosition, type ChangeFollower } from './changes.js';
import { createConfiguredEmbeddingModel, type EmbeddingModelConfig } from '../model/provider.js';
import { createKnowledgeEmbedder } from './embeddings.js';
import { HeldOwners } from './held-owners.js';
import { createIndexSync, type IndexSync } from './index-sync.js';
import { createKnowledgeIndex } from './knowledge-index.js';
import { createKnowledgeLibrary } from './library.js';
import { createMissLog } from './misses.js';
import type { Audience, Passage } from './model.js';
import { searchKnowledgeTool } from './search-tool.js';
import { createKnowledgeService, type KnowledgeService } from './service.js';
import { createKnowledgeStore } from './store.js';
import { createSuggestions, type DraftUsageRecorder, type Suggestions, type TeamExchange } from './suggestions.js';

const SCHEDULE_EVERY_MS = 60_000;
const SYNC_EVERY_MS = 60_000;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 10_000;

export interface KnowledgeFeatureOptions {
  redis: RedisClient;
  connection: Connection;
  logger: Logger;
  metrics: Metrics;
  config: KnowledgeConfig;
  /** The admin API's token (absent: no `/admin/knowledge`). */
  adminToken: string | undefined;
  /** The model configuration: MODEL_EMBEDDING's model (through the provider registry) makes the search hybrid; absent: lexical. */
  model?: EmbeddingModelConfig | undefined;
  /** How often the re-crawl schedule looks for due sources (tests shorten it). */
  scheduleEveryMs?: number;
  /** How often this process compares its index with MongoDB's owners (tests shorten or lengthen it). */
  syncEveryMs?: number;
  /** MongoDB's link: the index is built once it answers (no query waits in mongoose's buffer meanwhile). */
  mongoLink?: { whenConnected(name: string, task: () => Promise<void>): void };
  /**
   * The misses turns' usage entries carry (the store feature's): each usage fold's are listed
   * (`listWith`), and the list folds first (`fold`) so it shows a miss as soon as its turn is finished.
   */
  pendingMisses?: { listWith(list: (lines: readonly string[]) => Promise<unknown>): void; fold(): Promise<void> } | undefined;
  /** Told of each question listed at its turn's finish (`recordMiss`: an orchestrator with no usage store), once per customer message (`messageKey`: `channel:messageId`). */
  onMiss?: (miss: { channel: string; messageKey: string }) => void;
  /** The model providers FAQ suggestions are drafted with (built on first use; absent: none drafted). */
  models?: (() => ModelProvider) | undefined;
  /** Told of each suggestion draft's model call (the usage store and the reports meter it like a turn's). */
  onUsage?: DraftUsageRecorder | undefined;
}

/** The options the composition root gives: the knowledge's configuration, the admin token, the models (a test's, or the configured ones). */
export const knowledgeOptions = (config: Pick<Config, 'knowledge' | 'model' | 'adminToken'>, overrides: { models?: ModelProvider | undefined }) => ({
  config: config.knowledge,
  adminToken: config.adminToken,
  model: config.model,
  models: () => overrides.models ?? createConfiguredModelProvider(config.model),
});

/** The orchestrator's hook (`OrchestratorOptions.knowledge`). */
export type KnowledgeTurnHook = TurnKnowledge;

export interface KnowledgeFeature {
  router: Router;
  tools(): readonly AssistantTool[];
  turn: KnowledgeTurnHook;
  retrieve(query: string, context: Audience & { terms?: string | undefined }): Promise<Passage[]>;
  service: KnowledgeService;
  /** FAQ suggestions learned from the team; `fromTeam` is the takeover's hook at a takeover's end. */
  suggestions: Suggestions;
  fromTeam(exchange: TeamExchange): void;
  start(): void;
  /** Resolves once this process's index was built from MongoDB. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export async function createKnowledgeFeature(options: KnowledgeFeatureOptions): Promise<KnowledgeFeature> {
  const { redis, logger, metrics, config } = options;
  const store = createKnowledgeStore(options.connection);
  const embedding = options.model ? createConfiguredEmbeddingModel(options.model) : undefined;
  const embedder = embedding ? createKnowledgeEmbedder(embedding, logger, metrics) : undefined;
  const index = await createKnowledgeIndex({ embeddingModel: embedder?.label });
  const held = new HeldOwners();
  const library = createKnowledgeLibrary({ store, index, redis, logger, metrics, embedder, held });
  const sync: IndexSync = createIndexSync({ store, index, library, held, redis, logger, metrics, everyMs: options.syncEveryMs ?? SYNC_EVERY_MS });
  const pending = options.pendingMisses;
  const misses = createMissLog(redis, { logger, metrics, ...(pending ? { pending: pending.fold } : {}) });
  pending?.listWith(misses.listFolded);
  const service = createKnowledgeService({
    store,
    index,
    library,
    misses,
    redis,
    limits: config.crawl,
    logger,
    metrics,
    embedder,
    workers: sync.workers,
  });
  const suggestions = createSuggestions({ connection: options.connection, library, models: options.models, usage: options.onUsage, logger, metrics });
  const router = createKnowledgeRouter({ adminToken: options.adminToken, service, maxDocumentBytes: config.maxDocumentBytes, logger, metrics, suggestions });
  let built = false;
  let closed = false;
  let follower: ChangeFollower | undefined;
  let timer: NodeJS.Timeout | undefined;
  let markReady: () => void = () => undefined;
  const readiness = new Promise<void>((resolve) => (markReady = resolve));

  const retrieve: KnowledgeFeature['retrieve'] = (query, context) =>
    service.retrieve(context.terms?.trim() ? [context.terms, query] : query, { site: context.site, channel: context.channel }, config.maxPassages);

  const schedule = async () => {
    const due = Date.now() - config.recrawlHours * 3_600_000;
    for (const source of await store.listSources()) {
      if (closed) return;
      if (!source.lastCrawlAt || source.lastCrawlAt.getTime() < due) await service.crawl(source._id);
    }
  };

  const startUp = async () => {
    for (let attempt = 1; !closed; attempt += 1) {
      try {
        const position = await streamPosition(redis);
        const started = performance.now();
        const count = await sync.build();
        built = true;
        logger.info('knowledge-index-built', { chunks: count, ms: Math.round(performance.now() - started) });
        follower = followChanges(redis, position, sync.apply, { logger, metrics, onGap: sync.requestResync });
        sync.start();
        markReady();
        library
          .embedMissing(index.unembeddedOwners())
          .then((owners) => owners > 0 && logger.info('knowledge-embeddings-added', { owners }))
          .catch((error: unknown) => logger.warn('knowledge-embedding-backfill-failed', { error }));
        break;
      } catch (error) {
        const retryInMs = Math.min(FIRST_RETRY_MS * 2 ** (attempt - 1), MAX_RETRY_MS);
        logger.warn('knowledge-index-build-failed', { attempts: attempt, retryInMs, error });
        await new Promise((resolve) => setTimeout(resolve, retryInMs));
      }
    }
    if (closed) return;
    for (const source of config.sources) await service.addSource(source, 'config');
    const tick = () =>
      void schedule().catch((error: unknown) => {
        logger.warn('knowledge-schedule-failed', { error });
      });
    tick();
    timer = setInterval(tick, options.scheduleEveryMs ?? SCHEDULE_EVERY_MS);
    timer.unref();
  };

  const tool = searchKnowledgeTool((query, audience) => service.retrieve(query, audience, config.maxPassages));

  return {
    router,
    tools: () => [tool],
    retrieve,
    service,
    suggestions,
    fromTeam: suggestions.fromTeam,
    turn: {
      hasContent: () => built && index.size() > 0,
      async brief(input) {
        if (!built) return undefined;
        const audience = { site: input.metadata.siteKey, channel: input.channel };
        const passages = fitPassages(await retrieve(input.question, { ...audience, terms: input.terms }), config.maxPassages, config.maxPassageTokens);
        if (passages.length > 0) metrics.increment('knowledge_hits_total', { role: input.roleId });
        else if (input.hitsOnly) return undefined;
        // Recorded with the turn's finish (in its usage entry, or `recordMiss`), once per reply, should the turn miss.
        const miss = {
          role: input.roleId,
          question: input.question,
          terms: input.terms,
          ...(audience.site ? { site: audience.site } : {}),
          channel: input.channel,
          messageKey: `${input.channel}:${input.messageId}`,
        };
        const section = passages.length > 0 ? sourcesSection(passages) : missSection(customerLanguage(input.metadata, input.question));
        return { section, sources: citedSources(passages), miss };
      },
      async recordMiss({ messageKey, ...miss }) {
        if (await misses.record(miss)) options.onMiss?.({ channel: miss.channel, messageKey });
      },
    },
    start() {
      if (options.mongoLink) options.mongoLink.whenConnected('knowledge index', async () => void startUp());
      else void startUp();
    },
    ready: () => readiness,
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      await follower?.close();
      await sync.close();
      await suggestions.close();
    },
  };
}
