/**
 * The business's guidance as one feature: entries an owner writes in words (style,
 * clarification, escalation, policy), scoped to roles, channels, sites and a verified audience,
 * edited as a draft and published as numbered versions. It hands the rest of the service
 *   - `router`: the operator API under `/admin/guidance` (the admin bearer token) and the page at
 *     `/admin/reports/guidance` (the reports' sign-in);
 *   - `turn`: the orchestrator's `guidance` hook (the routed role's section, the judge's
 *     escalation entries);
 *   - `start()`: reads the live version from MongoDB (retried until it succeeds), then follows
 *     the change stream and checks every GUIDANCE_CHECK_SECONDS (`live.ts`); `close()`.
 * Until the live version is read a turn gets no guidance section.
 */
import express, { type Router } from 'express';
import type { Config } from '../config.js';
import type { RoleDefinition } from '../contracts/index.js';
import type { AssistantTool } from '../contracts/tool.js';
import type { TurnKnowledge } from '../orchestrator/prepare-turn.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import { createConfiguredModelProvider, type ModelProvider } from '../model/provider.js';
import type { Infrastructure } from '../infrastructure.js';
import type { TurnGuidance } from '../orchestrator/turn-guidance.js';
import { createGuidanceRouter } from './admin.js';
import { createLiveGuidance } from './live.js';
import { createGuidancePage } from './page-routes.js';
import { createPageGuidance } from './page-entries.js';
import type { PageGuidance } from '../transcripts/page-guidance.js';
import { createGuidanceService, GuidanceRefusal, type GuidanceService } from './service.js';
import type { GuidanceEntry } from './model.js';
import { createGuidanceStore } from './store.js';
import { createTurnGuidance } from './turn.js';
import { createSimulator, type SimulatedChannelSource } from './simulation.js';
import { createSimulationStore, type Scenario, type SimulationResult } from './simulation-model.js';

/** Runs scenarios, one after the other, against the draft or the live guidance. */
export type Simulations = (scenarios: readonly Scenario[], against: 'draft' | 'published') => Promise<SimulationResult[]>;

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 10_000;

export interface GuidanceFeature {
  router: Router;
  turn: TurnGuidance;
  service: GuidanceService;
  simulations: Simulations;
  /** Names the entries a reply's transcript records, for the transcript page. */
  pageEntries: PageGuidance;
  start(): void;
  /** Resolves once this process read its live version. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function createGuidanceFeature(
  infra: Pick<Infrastructure, 'redis' | 'mongo' | 'logger' | 'metrics'> & { mongoLink?: Infrastructure['mongoLink'] },
  config: Pick<Config, 'guidance' | 'adminToken' | 'model'> & Partial<Pick<Config, 'publicBaseUrl' | 'actions'>>,
  deps: {
    roles: readonly RoleDefinition[];
    /** The enabled channels (their ids, prompt fragments, and the tools a simulation offers as its own). */
    channels: () => ReadonlyMap<string, SimulatedChannelSource>;
    /** A test's models (the configured ones otherwise, built on a simulation's first use). */
    models?: ModelProvider | undefined;
    /** The MCP tools customers' turns are offered (reads, writes as proposals): a simulation's reads and proposals. */
    actions?: { mcpTools(): readonly AssistantTool[] };
    /** The MCP server's writes as listed (for a proposal's summary). */
    mcp?: { writeTools(): readonly McpWriteTool[] } | undefined;
    /** The business's knowledge: a simulation searches it, read-only. */
    knowledge?: { tools(): readonly AssistantTool[]; turn: TurnKnowledge };
  },
): GuidanceFeature {
  const { redis, logger, metrics } = infra;
  const store = createGuidanceStore(infra.mongo);
  const live = createLiveGuidance({ store, redis, logger, metrics, everyMs: config.guidance.checkEveryMs });
  const roleIds = deps.roles.map((role) => role.id);
  const service = createGuidanceService({
    store,
    live,
    redis,
    logger,
    budgets: config.guidance,
    roles: () => roleIds,
    channels: () => [...deps.channels().keys()],
    ...(config.guidance.publishRequiresPass ? { beforePublish: (entries: GuidanceEntry[]) => requirePassing(entries) } : {}),
  });
  const simulationStore = createSimulationStore(infra.mongo);
  let models = deps.models;
  const simulate = createSimulator({
    roles: deps.roles,
    models: () => (models ??= createConfiguredModelProvider(config.model)),
    limits: config.model,
    channels: deps.channels,
    tools: {
      ...(deps.actions ? { mcpTools: deps.actions.mcpTools } : {}),
      ...(deps.mcp ? { writeTools: () => deps.mcp?.writeTools() ?? [] } : {}),
      ...(deps.knowledge ? { knowledgeTools: deps.knowledge.tools, knowledge: deps.knowledge.turn } : {}),
      ...(config.actions ? { actions: config.actions } : {}),
    },
    redis,
    store: simulationStore,
    promptTokens: config.guidance.promptTokens,
    logger,
    metrics,
  });
  /** Every scenario simulated so far, run against the set about to be published: any failing refuses it (409). */
  const requirePassing = async (entries: GuidanceEntry[]) => {
    const failed = [];
    for (const scenario of await simulationStore.scenarios()) {
      const result = await simulate(scenario, { against: 'draft', version: 0, entries });
      if (!result.passed) failed.push({ scenario: scenario.name, result: result.id, failed: result.verdicts.filter((verdict) => !verdict.passed) });
    }
    if (failed.length > 0) {
      throw new GuidanceRefusal(409, 'simulations_failed', `${failed.length} scenario(s) fail against the draft: publishing needs all to pass`, { failed });
    }
  };
  const simulations: Simulations = async (scenarios, against) => {
    const latest = against === 'published' ? await store.latest() : undefined;
    const entries = against === 'published' ? (latest?.entries ?? []) : await store.drafts();
    const results = [];
    for (const scenario of scenarios) results.push(await simulate(scenario, { against, version: latest?.version ?? 0, entries }));
    return results;
  };
  let closed = false;
  let markReady: () => void = () => undefined;
  const readiness = new Promise<void>((resolve) => (markReady = resolve));

  const startUp = async () => {
    for (let attempt = 1; !closed; attempt += 1) {
      try {
        await live.start();
        markReady();
        return;
      } catch (error) {
        const retryInMs = Math.min(FIRST_RETRY_MS * 2 ** (attempt - 1), MAX_RETRY_MS);
        logger.warn('guidance-start-failed', { attempts: attempt, retryInMs, error });
        await new Promise((resolve) => setTimeout(resolve, retryInMs));
      }
    }
  };

  return {
    router: express
      .Router()
      .use(createGuidanceRouter({ adminToken: config.adminToken, service, simulations, logger, metrics }))
      .use(
        createGuidancePage({
          adminToken: config.adminToken,
          secureCookies: config.publicBaseUrl?.startsWith('https:') === true,
          redis,
          service,
          logger,
          metrics,
          runSaved: async () => simulations(await simulationStore.scenarios(), 'draft'),
        }),
      ),
    turn: createTurnGuidance({ current: live.current, promptTokens: config.guidance.promptTokens, logger, metrics }),
    service,
    simulations,
    pageEntries: createPageGuidance({ store, current: live.current }),
    start() {
      if (infra.mongoLink) infra.mongoLink.whenConnected('guidance', async () => void startUp());
      else void startUp();
    },
    ready: () => readiness,
    async close() {
      closed = true;
      await live.close();
    },
  };
}
