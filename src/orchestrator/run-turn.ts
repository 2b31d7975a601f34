/**
 * The orchestrator's entry point. It only wires the steps of a leg — grounding, route,
 * system prompt, tool offer, model — each in its own file, and never branches on which role
 * or channel is running. Post-turn work runs when the caller reports the reply delivered.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ModelProvider } from '../model/provider.js';
import { offerTools } from '../tools/offer.js';
import type { AssistantTool } from '../tools/tool.js';
import { callModel, type ModelLimits } from './call-model.js';
import type { ChannelDefinition, RoleDefinition, TurnInput, TurnResult } from './contracts.js';
import { groundingSentence } from './grounding.js';
import { buildSystemPrompt } from './system-prompt.js';

export const MODEL_FAILURE_REPLY =
  "Sorry, I couldn't answer that just now. Please send your message again in a minute.";

export interface OrchestratorOptions {
  roles: readonly RoleDefinition[];
  models: ModelProvider;
  limits: ModelLimits;
  logger: Logger;
  metrics: Metrics;
  /** The MCP reads this deployment can offer (empty when no MCP server is configured). */
  mcpTools?: () => readonly AssistantTool[];
}

export interface Orchestrator {
  runTurn(channel: ChannelDefinition, input: TurnInput): Promise<TurnResult>;
}

export function createOrchestrator(options: OrchestratorOptions): Orchestrator {
  const [defaultRole] = options.roles;
  if (!defaultRole) throw new Error('the roster is empty');

  return {
    async runTurn(channel, input) {
      const runId = input.runId || randomUUID();
      const logger = input.logger.child({ runId });
      const grounding = groundingSentence(await channel.grounding(input));
      const role = defaultRole;
      const offered = offerTools({ role, channelTools: channel.tools, mcpTools: options.mcpTools?.() ?? [] });
      const system = buildSystemPrompt({ role, channel, grounding, facts: {}, inScope: true });
      const started = performance.now();
      try {
        const result = await callModel({
          model: options.models.model('fast'),
          system,
          messages: input.history,
          tools: offered,
          toolContext: { conversationId: input.conversationId, runId, roleId: role.id, signal: input.signal },
          limits: options.limits,
          signal: input.signal,
          onTextDelta: input.onTextDelta,
        });
        options.metrics.increment('model_calls_total', { purpose: 'reply' });
        logger.info('turn-answered', { roleId: role.id, ms: Math.round(performance.now() - started) });
        return {
          runId,
          roleId: role.id,
          text: result.text || MODEL_FAILURE_REPLY,
          failed: !result.text,
          offeredTools: offered.map((tool) => tool.name),
          toolCalls: result.toolCalls,
          modelCalls: 1,
        };
      } catch (error) {
        options.metrics.increment('model_calls_total', { purpose: 'reply' });
        options.metrics.increment('model_failures_total');
        logger.error('model-failed', { roleId: role.id, error });
        return {
          runId,
          roleId: role.id,
          text: MODEL_FAILURE_REPLY,
          failed: true,
          offeredTools: offered.map((tool) => tool.name),
          toolCalls: [],
          modelCalls: 1,
        };
      }
    },
  };
}
