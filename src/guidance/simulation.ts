/**
 * Simulations: a scenario's customer (a model, from the scenario's words) converses with the real
 * turn — the same orchestrator, roster, judge and reply models — for up to `maxTurns`, then one
 * grading call judges each success criterion with its reason. The assistant follows the draft or
 * the live guidance. Nothing leaves: the channel is the scenario's in name, prompt and tools only
 * (no sends; its hand-offs recorded, never made; `simulation-tools.ts`), a write is proposed and
 * recorded, never run, the MCP server's reads are called only when the scenario asks, bound to
 * its customer as a real turn's are, and the conversation's state is under a key of its own.
 * Model calls are metered apart from customers' (`simulation_model_calls_total{purpose}`), never
 * in the usage store.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { generateText, Output, type ModelMessage } from 'ai';
import { z } from 'zod';
import type { ChannelDefinition, RoleDefinition } from '../contracts/index.js';
import type { LinkedCustomer } from '../contracts/tool.js';
import type { Logger } from '../logger.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { MODEL_TELEMETRY, type ModelProvider } from '../model/provider.js';
import { withDeadline } from '../orchestrator/deadline.js';
import { createOrchestrator } from '../orchestrator/run-turn.js';
import { createConversationState } from '../orchestrator/state/conversation-state.js';
import { createDecisionStore } from '../orchestrator/state/decision-store.js';
import { createFactStore } from '../orchestrator/state/fact-store.js';
import type { RedisClient } from '../redis.js';
import type { GuidanceEntry, PublishedVersion } from './model.js';
import { createSimulationStore, type Scenario, type SimulationResult, type Verdict } from './simulation-model.js';
import { createSimulationTools, type SimulationToolSources, type SimulationTools } from './simulation-tools.js';
import { createTurnGuidance } from './turn.js';

const DONE = 'END';

export interface SimulationDependencies {
  roles: readonly RoleDefinition[];
  models: () => ModelProvider;
  limits: { maxSteps: number; maxOutputTokens: number; timeoutMs: number };
  channels: () => ReadonlyMap<string, SimulatedChannelSource>;
  /** The service's tools a simulated turn may reach (none given: no tool is offered). */
  tools?: SimulationToolSources;
  redis: RedisClient;
  store: ReturnType<typeof createSimulationStore>;
  promptTokens: number;
  logger: Logger;
  metrics: Metrics;
}

/** What a simulation takes of a real channel: its prompt, and its tools and their bindings where it has them. */
export type SimulatedChannelSource = Pick<ChannelDefinition, 'promptFragment'> &
  Partial<Pick<ChannelDefinition, 'tools' | 'capabilityTools' | 'roleCapabilityTools'>>;

/** The scenario's channel: its prompt, and its tools as the simulation offers them; the customer verified only when the scenario says so. */
function simulatedChannel(scenario: Scenario, real: SimulatedChannelSource | undefined, tools: SimulationTools): ChannelDefinition {
  const given = scenario.contact;
  const linked: LinkedCustomer | undefined =
    given && given.verified !== false ? { name: given.name, email: given.email, customerId: given.customerId, entities: given.entities } : undefined;
  return {
    id: scenario.channel,
    promptFragment: real?.promptFragment ?? '',
    tools: tools.channelTools,
    capabilityTools: real?.capabilityTools ?? {},
    ...(real?.roleCapabilityTools ? { roleCapabilityTools: real.roleCapabilityTools } : {}),
    ...(linked ? { identify: async () => linked } : {}),
    grounding: () => [],
    splitReply: (text) => [text],
    transport: { send: async () => ({ channelMessageId: randomUUID(), status: 'delivered' as const }) },
  };
}

const SPEAKERS = { customer: 'Customer', assistant: 'Assistant', service: 'Service (not shown to the customer)' } as const;
/** The conversation as text: the grader reads the service's lines too, the simulated customer only what a customer would see. */
const transcriptText = (conversation: SimulationResult['conversation'], withService = true) =>
  conversation
    .filter((line) => withService || line.from !== 'service')
    .map((line) => `${SPEAKERS[line.from]}: ${line.text}`)
    .join('\n');

export function createSimulator(dependencies: SimulationDependencies) {
  const { redis, logger, metrics } = dependencies;
  const count = (purpose: string, calls = 1) => metrics.increment('simulation_model_calls_total', { purpose }, calls);

  const text = async (system: string, prompt: string, output?: Parameters<typeof generateText>[0]['output']) => {
    const entry = dependencies.models().entries('fast')[0];
    if (!entry) throw new Error('no fast model configured');
    return withDeadline(dependencies.limits.timeoutMs, new AbortController().signal, (abortSignal) =>
      generateText({
        model: entry.model,
        system,
        prompt,
        maxOutputTokens: 600,
        maxRetries: 0,
        abortSignal,
        telemetry: MODEL_TELEMETRY,
        ...(output ? { output } : {}),
      }),
    );
  };

  const customerSays = async (scenario: Scenario, conversation: SimulationResult['conversation']) => {
    count('customer');
    const system = `You play a customer in a test of a business's assistant. Stay in character; write only your next message, in ${scenario.language ?? 'the language your character uses'}. When you have what you wanted, or would give up, write only ${DONE}.\nYour character: ${scenario.persona}`;
    const answer = await text(system, conversation.length ? `The conversation so far:\n${transcriptText(conversation, false)}` : 'Write your first message.');
    return answer.text.trim();
  };

  const grade = async (scenario: Scenario, conversation: SimulationResult['conversation']): Promise<Verdict[]> => {
    count('grade');
    const schema = z.object({ verdicts: z.array(z.object({ passed: z.boolean(), reason: z.string().max(400) })).length(scenario.criteria.length) });
    const system = `You grade a test conversation between a customer and a business's assistant against success criteria. For each criterion, in order, say whether the conversation meets it and why, in one sentence.\nCriteria:\n${scenario.criteria.map((criterion, index) => `${index + 1}. ${criterion}`).join('\n')}`;
    const answer = await text(system, `The conversation:\n${transcriptText(conversation)}`, Output.object({ schema }));
    const verdicts = (answer.output as z.infer<typeof schema>).verdicts;
    return scenario.criteria.map((criterion, index) => ({
      criterion,
      passed: verdicts[index]?.passed === true,
      reason: verdicts[index]?.reason ?? 'not graded',
    }));
  };

  return async (scenario: Scenario, guidance: { against: 'draft' | 'published'; version: number; entries: GuidanceEntry[] }): Promise<SimulationResult> => {
    // The simulated turns' own counters (turns, judge calls, guidance applied): never the service's.
    const apart = createMetrics();
    const real = dependencies.channels().get(scenario.channel);
    const tools = createSimulationTools(dependencies.tools ?? {}, real, { mcpReads: scenario.mcpReads === true });
    const version: PublishedVersion = { version: guidance.version, entries: guidance.entries, publishedAt: new Date(0).toISOString() };
    const orchestrator = createOrchestrator({
      roles: dependencies.roles,
      models: dependencies.models(),
      limits: dependencies.limits,
      logger,
      metrics: apart,
      facts: createFactStore(redis),
      state: createConversationState(redis),
      decisions: createDecisionStore(redis),
      guidance: createTurnGuidance({ current: () => version, promptTokens: dependencies.promptTokens, logger, metrics: apart }),
      mcpTools: tools.mcpTools,
      ...(tools.knowledge ? { knowledge: tools.knowledge } : {}),
    });
    const channel = simulatedChannel(scenario, real, tools);
    // An unverified customer's name is only what they claim (as a WhatsApp profile name): shown, never bound to a tool call.
    const claimed = scenario.contact?.verified === false ? { displayName: scenario.contact.name } : {};
    const conversationId = `sim:${randomUUID()}`;
    const conversation: SimulationResult['conversation'] = [];
    const history: ModelMessage[] = [];
    for (let turn = 0; turn < scenario.maxTurns; turn += 1) {
      const said = await customerSays(scenario, conversation);
      if (!said || said === DONE) break;
      conversation.push({ from: 'customer', text: said });
      history.push({ role: 'user', content: said });
      const result = await orchestrator.runTurn(channel, {
        conversationId,
        firstTurn: turn === 0,
        runId: randomUUID(),
        inbound: {
          channel: channel.id,
          conversationKey: conversationId,
          messageId: randomUUID(),
          from: { address: conversationId, ...claimed },
          text: said,
          receivedAt: Date.now(),
          metadata: { ...(scenario.site ? { siteKey: scenario.site } : {}), ...(scenario.language ? { language: scenario.language } : {}) },
        },
        history: [...history],
        signal: new AbortController().signal,
        logger,
      });
      for (const call of result.usage ?? []) count(call.purpose);
      conversation.push(...tools.takeLines().map((line) => ({ from: 'service' as const, text: line })));
      conversation.push({ from: 'assistant', text: result.text });
      history.push({ role: 'assistant', content: result.text });
    }
    await orchestrator.resetConversation(conversationId);
    const verdicts = await grade(scenario, conversation);
    const previous = await dependencies.store.previous(scenario.name);
    const before = new Map(previous?.verdicts.map((verdict) => [verdict.criterion, verdict.passed]));
    const result: SimulationResult = {
      id: `sim_${randomBytes(8).toString('hex')}`,
      scenario,
      against: guidance.against,
      version: guidance.version,
      conversation,
      proposed: tools.proposed,
      handoffs: tools.handoffs,
      verdicts,
      passed: verdicts.every((verdict) => verdict.passed),
      flipped: verdicts
        .filter((verdict) => before.has(verdict.criterion) && before.get(verdict.criterion) !== verdict.passed)
        .map((verdict) => verdict.criterion),
      ranAt: new Date().toISOString(),
    };
    await dependencies.store.keep(result);
    metrics.increment('simulations_total', { outcome: result.passed ? 'passed' : 'failed' });
    logger.info('guidance-simulation-ran', { id: result.id, passed: result.passed, turns: conversation.length, flipped: result.flipped.length });
    return result;
  };
}
