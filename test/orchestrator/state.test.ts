/**
 * What a conversation keeps in Redis: facts across turns and across orchestrator instances
 * (workers), compare-and-set under concurrent writers, the reset, and continuation legs —
 * resumed from the stored decision without judging, or refused once it has expired.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { z } from 'zod';
import type { ChannelDefinition, RoleDefinition } from '../../src/contracts/index.js';
import { createFactStore } from '../../src/orchestrator/state/fact-store.js';
import { stateKeys } from '../../src/orchestrator/state/keys.js';
import { ToolInterrupt, type AssistantTool } from '../../src/contracts/tool.js';
import { serviceWords } from '../../src/words/service-words.js';
import { createCliChannel } from '../../channels/cli/index.js';
import { createOrchestratorFixture, watchOrchestratorCommands, type OrchestratorFixture, type RedisCommand } from '../support/orchestrator-fixture.js';

const fixtures: OrchestratorFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fixture) => fixture.close()));
});
async function fixtureWith(options: Parameters<typeof createOrchestratorFixture>[0] = {}) {
  const fixture = await createOrchestratorFixture(options);
  fixtures.push(fixture);
  return fixture;
}
const conversation = () => `cli:state-${Math.random().toString(36).slice(2)}`;
/** The commands on this conversation's keys: other suites share the Redis server, and MONITOR sees theirs too. */
const ofConversation = (commands: RedisCommand[], id: string) =>
  commands.filter((command) => command.name !== 'MARK' && command.args.some((arg) => arg.includes(id)));

/** The judge learns the team size when the customer states it. */
const salesJudge = (teamSize: number | null) => (call: { schema?: { properties?: Record<string, unknown> }; userText: string }) => {
  const facts: Record<string, string | number | null> = Object.fromEntries(
    Object.keys((call.schema?.properties?.facts as { properties?: object } | undefined)?.properties ?? {}).map((key) => [key, null]),
  );
  if (teamSize !== null) facts['role.sales.team_size'] = teamSize;
  facts['role.sales.interested_plan'] = 'Pro';
  return { text: JSON.stringify({ route: 'sales', tier: 'fast', bundle: 'general', inScope: true, rankedTools: [], facts }) };
};

describe('facts', () => {
  test('are kept across turns and read by another orchestrator instance (another worker)', async () => {
    const first = await fixtureWith({ judge: salesJudge(12) });
    const id = conversation();
    await first.turn(id, 'Pro plan for 12 people?');
    const second = await fixtureWith({ judge: salesJudge(null) });
    await second.turn(id, 'and when can we start?', { firstTurn: false });
    const brief = second.models.replyCalls()[0]?.system ?? '';
    expect(brief).toContain('Established: plan Pro, team of 12.');
    expect(second.models.calls.find((call) => call.structured)?.userText).toContain('"team_size":12');
  });

  test("a turn routed back to a role gets the facts it stored, read with the turn's start state (one MGET, no GET)", async () => {
    const fixture = await fixtureWith({ judge: salesJudge(null) });
    const id = conversation();
    const facts = createFactStore(fixture.redis);
    await facts.remember(id, 'sales', { interested_plan: 'Pro', team_size: 12 });
    // The conversation was with support last: the judge routes it back to sales.
    await facts.writeActiveRole(id, 'support');
    const watcher = await watchOrchestratorCommands(process.env.TEST_REDIS_URL!);
    try {
      await fixture.turn(id, 'and when can we start?', { firstTurn: false });
      await watcher.mark(fixture.redis, 'turn');
      const reads = ofConversation(watcher.commands, id)
        .filter((command) => ['GET', 'MGET'].includes(command.name))
        .map((command) => command.name);
      expect(reads).toEqual(['MGET']);
      expect(fixture.models.replyCalls()[0]?.system ?? '').toContain('Established: plan Pro, team of 12.');
      expect((await facts.read(id, 'sales')).facts).toEqual({ interested_plan: 'Pro', team_size: 12 });
    } finally {
      await watcher.close();
    }
  });

  test("two concurrent turns writing one role's facts both land (compare-and-set, one retry)", async () => {
    const url = process.env.TEST_REDIS_URL!;
    const [a, b] = [new Redis(url), new Redis(url)];
    const store = createFactStore(a);
    const other = createFactStore(b);
    const id = conversation();
    const base = await store.read(id, 'sales');
    const watcher = await watchOrchestratorCommands(url);
    try {
      const [left, right] = await Promise.all([
        store.remember(id, 'sales', { team_size: 12 }, base),
        other.remember(id, 'sales', { timeline: 'next month' }, base),
      ]);
      await watcher.mark(a, 'cas');
      // Both try a CAS from version 0; the loser re-reads (one GET) and tries once more.
      const names = ofConversation(watcher.commands, id).map((command) => command.name);
      expect(names.sort()).toEqual(['EVAL', 'EVAL', 'EVAL', 'GET']);
      expect((await store.read(id, 'sales')).facts).toEqual({ team_size: 12, timeline: 'next month' });
      expect(Math.max(left.version, right.version)).toBe(2);
    } finally {
      await watcher.close();
      await Promise.all([a.quit(), b.quit()]);
    }
  });

  test("a reset clears the conversation's state in one command", async () => {
    const fixture = await fixtureWith({ judge: salesJudge(12) });
    const id = conversation();
    await fixture.turn(id, 'Pro plan for 12 people?');
    expect(await fixture.redis.exists(stateKeys.facts(id, 'sales'), stateKeys.activeRole(id))).toBe(2);
    const watcher = await watchOrchestratorCommands(process.env.TEST_REDIS_URL!);
    try {
      await fixture.orchestrator.resetConversation(id);
      await watcher.mark(fixture.redis, 'reset');
      expect(ofConversation(watcher.commands, id).map((command) => command.name)).toEqual(['DEL']);
      expect(await fixture.redis.exists(stateKeys.facts(id, 'sales'), stateKeys.activeRole(id))).toBe(0);
    } finally {
      await watcher.close();
    }
  });

  test('everything the orchestrator writes has a TTL; a turn that asks nothing stores no decision', async () => {
    const fixture = await fixtureWith({ judge: salesJudge(12) });
    const id = conversation();
    const result = await fixture.turn(id, 'Pro plan for 12 people?');
    for (const key of [stateKeys.facts(id, 'sales'), stateKeys.activeRole(id)]) {
      expect(await fixture.redis.ttl(key)).toBeGreaterThan(0);
    }
    // Only a question's answer continues a leg: with none asked, the decision stays in this process.
    expect(await fixture.redis.exists(stateKeys.decision(id, result.runId))).toBe(0);
    expect(await fixture.orchestrator.decision(id, result.runId)).toMatchObject({ roleId: 'sales' });
  });
});

describe('continuations', () => {
  /** A channel tool that asks the customer to pick a colour, as select_entity asks for an entity. */
  const pickColour: AssistantTool = {
    name: 'pick_colour',
    description: 'Ask the customer which colour they want.',
    origin: 'channel',
    category: 'session',
    effect: 'reversible',
    inputSchema: z.object({}),
    execute: async () => new ToolInterrupt('Which colour? 1. red 2. blue', { options: ['red', 'blue'] }),
    resume: async (answer, data) => {
      const options = (data as { options: string[] }).options;
      const chosen = options.find((option, index) => answer.trim() === String(index + 1) || answer.toLowerCase().includes(option));
      return chosen ? { output: { colour: chosen }, session: { colour: chosen } } : { askAgain: new ToolInterrupt('Please answer 1 or 2.', data) };
    },
  };
  const channelWithTool = (): ChannelDefinition => ({ ...createCliChannel({ write: () => undefined }), tools: [pickColour] });
  const askFirst = ({ toolNames, toolResults, system }: { toolNames: string[]; toolResults: unknown[]; system: string }) =>
    toolNames.includes('pick_colour') && toolResults.length === 0 && !system.includes('just answered')
      ? { toolCalls: [{ name: 'pick_colour', input: {} }] }
      : { text: `Done. ${system.includes('"colour":"blue"') ? 'Blue it is.' : ''}`.trim() };
  const supportWithTool = async () => {
    const { supportRole } = await import('../../roles/support.js');
    // pick_colour is a test-only tool, outside the channel tool names roles may name.
    return [{ ...supportRole, toolScope: { ...supportRole.toolScope, include: ['pick_colour'] } }] as unknown as RoleDefinition[];
  };

  /** A question asked on one worker whose decision then expired; `other` is another worker (without this process's copy of the decision). */
  const questionWhoseDecisionExpired = async () => {
    const roles = await supportWithTool();
    const asking = await fixtureWith({ roles, channel: channelWithTool(), script: askFirst });
    const id = conversation();
    const question = await asking.turn(id, 'help me set my colour');
    await asking.redis.del(stateKeys.decision(id, question.runId));
    return { id, other: await fixtureWith({ roles, channel: channelWithTool(), script: askFirst }) };
  };

  test('the answer resumes the stored decision on another worker without judging again', async () => {
    const roles = await supportWithTool();
    const asking = await fixtureWith({ roles, channel: channelWithTool(), script: askFirst });
    const id = conversation();
    const question = await asking.turn(id, 'help me set my colour');
    expect(question.text).toBe('Which colour? 1. red 2. blue');
    expect(await asking.redis.exists(stateKeys.pending(id))).toBe(1);
    // The leg left a question: its decision is stored, with a TTL, for the worker the answer comes to.
    expect(await asking.redis.ttl(stateKeys.decision(id, question.runId))).toBeGreaterThan(0);

    const resuming = await fixtureWith({ roles, channel: channelWithTool(), script: askFirst });
    const answer = await resuming.turn(id, '2', { firstTurn: false });
    expect(answer).toMatchObject({ roleId: 'support', modelCalls: 0, text: 'Done. Blue it is.' });
    expect(resuming.models.calls.filter((call) => call.structured)).toHaveLength(0);
    expect(answer.offeredTools).toEqual(question.offeredTools);
    expect(JSON.parse((await resuming.redis.get(stateKeys.session(id)))!)).toEqual({ colour: 'blue' });
    // Kept, marked answered by this message: a retry of it resumes the same answer; the next message finds it over.
    expect(JSON.parse((await resuming.redis.get(stateKeys.pending(id)))!)).toMatchObject({ answeredBy: expect.any(String) });
    const next = await resuming.turn(id, 'thanks', { firstTurn: false });
    expect(next.text).not.toBe('Done. Blue it is.');
    const after = await resuming.redis.get(stateKeys.pending(id));
    expect(after === null || (JSON.parse(after) as { answeredBy?: string }).answeredBy === undefined).toBe(true);
  });

  test('an answer that matches nothing asks again without a model call', async () => {
    const roles = await supportWithTool();
    const fixture = await fixtureWith({ roles, channel: channelWithTool(), script: askFirst });
    const id = conversation();
    await fixture.turn(id, 'help me set my colour');
    const again = await fixture.turn(id, 'green', { firstTurn: false });
    expect(again.text).toBe('Please answer 1 or 2.');
    expect(fixture.models.replyCalls()).toHaveLength(1);
  });

  test('an expired decision refuses the continuation instead of judging it afresh', async () => {
    const { id, other } = await questionWhoseDecisionExpired();
    const refused = await other.turn(id, '2', { firstTurn: false });
    expect(refused).toMatchObject({ text: serviceWords('en').questionExpired, modelCalls: 0 });
    expect(other.models.calls).toHaveLength(0);
    expect(other.logs).toContainEqual(expect.objectContaining({ event: 'continuation-refused' }));
    expect(await other.redis.exists(stateKeys.pending(id))).toBe(0);
  });

  test("the refusal is in the channel's language when the question did not say its own", async () => {
    const { id, other } = await questionWhoseDecisionExpired();
    const refused = await other.turn(id, '2', { firstTurn: false, metadata: { language: 'de-AT' } });
    expect(refused).toMatchObject({
      text: 'Entschuldigung, diese Frage ist abgelaufen. Könnten Sie mir noch einmal sagen, was Sie tun möchten?',
      modelCalls: 0,
    });
  });
});
