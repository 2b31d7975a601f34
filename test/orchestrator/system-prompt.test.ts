/**
 * `{capability}` placeholders in what a role writes: bound ones name the channel's tool, and a
 * sentence naming a capability the channel does not bind (the CLI binds none) never reaches
 * the model — neither the literal `{handoff}` nor an instruction to use a tool it lacks.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createCliChannel } from '../../channels/cli/index.js';
import type { Facts } from '../../src/contracts/index.js';
import { buildSystemPrompt } from '../../src/orchestrator/system-prompt.js';
import { roster } from '../../roles/index.js';
import { createOrchestratorFixture, type OrchestratorFixture } from '../support/orchestrator-fixture.js';

const PLACEHOLDER = /\{\w+\}/;
const cli = createCliChannel({ write: () => undefined });

describe('capability placeholders', () => {
  test('no role on the CLI gets a `{…}` placeholder, whatever the caller and facts', () => {
    for (const role of roster) {
      for (const caller of ['anonymous', 'identified'] as const) {
        for (const facts of [{}, { wants_human: true, wants_demo: true }] as Facts[]) {
          const prompt = buildSystemPrompt({ role, channel: cli, grounding: '', caller, facts, inScope: true });
          expect(prompt).not.toMatch(PLACEHOLDER);
          expect(prompt).toContain(role.instructions);
        }
      }
    }
  });

  test('an unbound capability drops only its own sentence; a bound one names the tool', () => {
    const bookkeeper = roster.find((role) => role.id === 'bookkeeper')!;
    const unbound = buildSystemPrompt({ role: bookkeeper, channel: cli, grounding: '', caller: 'anonymous', facts: {}, inScope: true });
    expect(unbound).toContain('do not look up or guess records: explain how they can identify themselves (as the channel describes).\n');
    expect(unbound).not.toContain('If they need a person');
    const bound = buildSystemPrompt({
      role: bookkeeper,
      channel: { ...cli, roleCapabilityTools: { bookkeeper: { handoff: 'open_support_chat' } } },
      grounding: '',
      caller: 'anonymous',
      facts: {},
      inScope: true,
    });
    expect(bound).toContain('(as the channel describes). If they need a person, offer open_support_chat.');
  });

  describe('a turn on the CLI channel', () => {
    let fixture: OrchestratorFixture;
    beforeAll(async () => {
      fixture = await createOrchestratorFixture();
    });
    afterAll(async () => {
      await fixture.close();
    });

    test('the model reads no placeholder, for support (whose notes name {handoff}) and the bookkeeper', async () => {
      await fixture.turn(`cli:prompt-${Date.now()}`, 'I cannot log in, I need help from a person');
      await fixture.turn(`cli:prompt-${Date.now()}-b`, 'is my invoice 1042 paid?');
      const replies = fixture.models.replyCalls();
      expect(replies).toHaveLength(2);
      expect(replies[0]!.system).toContain("You are the business's support assistant.");
      expect(replies[1]!.system).toContain("You are the business's bookkeeping assistant.");
      for (const call of replies) expect(call.system).not.toMatch(PLACEHOLDER);
    });
  });
});
