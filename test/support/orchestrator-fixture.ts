/**
 * An orchestrator on real Redis with the deterministic model, for tests that drive legs
 * directly and count what a turn costs: model calls (from the model's call log) and Redis
 * commands on orchestrator keys (from Redis's own MONITOR stream).
 */
import type { TurnGuidance } from '../../src/orchestrator/turn-guidance.js';
import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import { Redis } from 'ioredis';
import { createCliChannel } from '../../channels/cli/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createProviderBreakers } from '../../src/model/provider-breaker.js';
import type { ChannelDefinition, RoleDefinition, TurnResult } from '../../src/contracts/index.js';
import { createOrchestrator, type Orchestrator } from '../../src/orchestrator/run-turn.js';
import { createConversationState } from '../../src/orchestrator/state/conversation-state.js';
import { createDecisionStore } from '../../src/orchestrator/state/decision-store.js';
import { createFactStore } from '../../src/orchestrator/state/fact-store.js';
import type { AssistantTool } from '../../src/contracts/tool.js';
import { roster } from '../../roles/index.js';
import { createDeterministicModels, type DeterministicModels, type Script } from './deterministic-model.js';
import type { LogLine } from './harness.js';

export interface RedisCommand {
  name: string;
  args: string[];
}

const QUEUE_STATE_ERROR = 'Command queue state error';

/**
 * A connection in MONITOR mode, once Redis streams to it. Not ioredis's `monitor()`: ioredis
 * enters monitoring mode a microtask after MONITOR's OK, so a line that arrives in the same read
 * as the OK finds an empty command queue, ioredis emits "Command queue state error", `monitor()`
 * rejects and its connection stays open (the test fails and Jest never exits). That line is some
 * other client's command from before anything is watched: dropped here.
 */
export async function openMonitor(url: string): Promise<Redis> {
  const monitor = new Redis(url, { monitor: true });
  let watching = false;
  await new Promise<void>((resolve, reject) => {
    monitor.on('error', (error: Error) => {
      if (watching || error.message.startsWith(QUEUE_STATE_ERROR)) return;
      monitor.disconnect();
      reject(error);
    });
    monitor.once('monitoring', () => {
      watching = true;
      resolve();
    });
  });
  return monitor;
}

/** Records every command Redis executes on orchestrator keys, as Redis itself reports them. */
export async function watchOrchestratorCommands(url: string) {
  const monitor = await openMonitor(url);
  const commands: RedisCommand[] = [];
  const marks = new Map<string, () => void>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    // Commands a Lua script runs are part of its one EVAL, not commands of their own.
    if (source === 'lua') return;
    const [name = '', ...rest] = args;
    if (name.toLowerCase() === 'echo' && rest[0]?.startsWith('mark:')) {
      commands.push({ name: 'MARK', args: [rest[0]] });
      marks.get(rest[0])?.();
      return;
    }
    // Orchestrator state, a turn's pending action (src/actions/) when it proposes one (with its
    // same-change lookup and its place on the sweeper's list), and the model providers' circuit
    // breakers (a healthy turn must not touch them).
    if (
      rest.some(
        (arg) =>
          arg.startsWith('asst:state:') ||
          arg.startsWith('asst:decision:') ||
          arg.startsWith('asst:action:') ||
          arg.startsWith('asst:actions-') ||
          arg.startsWith('asst:{model-breaker:'),
      )
    ) {
      commands.push({ name: name.toUpperCase(), args: rest });
    }
  });
  return {
    commands,
    /** Sends a marker through `client` and waits until MONITOR has seen it (and all before it). */
    async mark(client: Redis, label: string) {
      const id = `mark:${label}:${randomUUID()}`;
      const seen = new Promise<void>((resolve) => marks.set(id, resolve));
      await client.echo(id);
      await seen;
      return id;
    },
    clear() {
      commands.splice(0);
    },
    async close() {
      monitor.disconnect();
    },
  };
}

export interface OrchestratorFixture {
  orchestrator: Orchestrator;
  channel: ChannelDefinition;
  models: DeterministicModels;
  redis: Redis;
  logs: LogLine[];
  metrics: ReturnType<typeof createMetrics>;
  /** Runs one leg of `conversationId` with `text`, keeping the conversation's history. */
  turn(
    conversationId: string,
    text: string,
    options?: {
      firstTurn?: boolean;
      deliver?: boolean;
      /** Streams the reply (the web channel's path). */
      onTextDelta?: (delta: string) => void;
      /** What the channel reports with the message (e.g. a tapped choice's id as `choice`). */
      metadata?: Record<string, string>;
    },
  ): Promise<TurnResult>;
  close(): Promise<void>;
}

export async function createOrchestratorFixture(
  options: {
    roles?: readonly RoleDefinition[];
    mcpTools?: () => readonly AssistantTool[];
    channel?: ChannelDefinition;
    script?: Script;
    judge?: Script;
    judgeBreaker?: { threshold: number; cooldownMs: number; now?: () => number };
    /** The model calls' deadline (10 s unless given). */
    timeoutMs?: number;
    /** Per-provider circuit breakers in Redis, as production has them (namespaced to this fixture). */
    breakers?: boolean;
    /** The business's guidance hook (src/guidance/). */
    guidance?: TurnGuidance;
  } = {},
): Promise<OrchestratorFixture> {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('TEST_REDIS_URL is not set');
  const redis = new Redis(url);
  const logs: LogLine[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const metrics = createMetrics();
  const models = createDeterministicModels(options.script ?? (({ userText }) => ({ text: `Answer to: ${userText}` })), options.judge);
  const channel = options.channel ?? createCliChannel({ write: () => undefined });
  const orchestrator = createOrchestrator({
    roles: options.roles ?? roster,
    models,
    limits: { maxSteps: 5, maxOutputTokens: 512, timeoutMs: options.timeoutMs ?? 10_000 },
    logger,
    metrics,
    facts: createFactStore(redis),
    state: createConversationState(redis),
    decisions: createDecisionStore(redis),
    ...(options.mcpTools ? { mcpTools: options.mcpTools } : {}),
    ...(options.judgeBreaker ? { judgeBreaker: options.judgeBreaker } : {}),
    ...(options.guidance ? { guidance: options.guidance } : {}),
    ...(options.breakers ? { breakers: createProviderBreakers({ redis, failures: 3, cooldownMs: 30_000, scope: randomUUID() }) } : {}),
  });
  const histories = new Map<string, ModelMessage[]>();

  return {
    orchestrator,
    channel,
    models,
    redis,
    logs,
    metrics,
    async turn(conversationId, text, turnOptions = {}) {
      const history = histories.get(conversationId) ?? [];
      history.push({ role: 'user', content: text });
      const result = await orchestrator.runTurn(channel, {
        conversationId,
        firstTurn: turnOptions.firstTurn ?? history.length === 1,
        runId: randomUUID(),
        inbound: {
          channel: channel.id,
          conversationKey: conversationId,
          messageId: randomUUID(),
          from: { address: conversationId },
          text,
          receivedAt: Date.now(),
          metadata: turnOptions.metadata ?? {},
        },
        history: [...history],
        signal: new AbortController().signal,
        logger,
        ...(turnOptions.onTextDelta ? { onTextDelta: turnOptions.onTextDelta } : {}),
      });
      history.push({ role: 'assistant', content: result.text });
      histories.set(conversationId, history);
      if (turnOptions.deliver !== false) await orchestrator.finishTurn(channel, result, true);
      return result;
    },
    async close() {
      await redis.quit();
    },
  };
}
