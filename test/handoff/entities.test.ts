/**
 * Entity selection: a customer linked to several companies picks one by number or by name (a
 * continuation leg, no re-judging), a reply that matches nothing is asked again once and then
 * the conversation carries on without one; an unlinked number is served without account data.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { stateKeys } from '../../src/orchestrator/state/keys.js';
import type { Script } from '../support/deterministic-model.js';
import { startHarness, type Harness } from '../support/harness.js';

const LINKED = 'whatsapp:+447700903001';
/** The question as a quick reply (issue 23): its companies are the buttons, the numbered lines left out. */
const LIST = 'Which company is this about?\nReply with the number or the name.';

const assistant: Script = ({ system, toolNames, toolResults }) => {
  const answered = system.match(/Result: (\{.*\})\. Continue from there\./)?.[1];
  if (answered) {
    const result = JSON.parse(answered) as { selected: { name: string } | null };
    return { text: result.selected ? `Thanks, looking at ${result.selected.name}'s invoices now.` : 'No problem, let us continue without a company.' };
  }
  if (toolNames.includes('select_entity') && toolResults.length === 0 && !system.includes('Selected company:') && system.includes('companies:')) {
    return { toolCalls: [{ name: 'select_entity', input: {} }] };
  }
  if (system.includes('not linked to a customer account')) return { text: 'Your number is not linked to an account yet.' };
  return { text: `Answer about ${system.match(/Selected company: ([^(]+) \(/)?.[1] ?? 'no company'}.` };
};

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ script: assistant });
  await harness.services.contacts.upsert({
    address: LINKED,
    name: 'Ana Pérez',
    email: 'ana@acme.example',
    entities: [
      { id: 'acme-uk', name: 'Acme Ltd' },
      { id: 'acme-es', name: 'Acme Iberia SL' },
    ],
  });
});
afterAll(() => harness.close());
beforeEach(async () => {
  harness.twilio.reset();
  await harness.services.redis.del(stateKeys.session(conversationKeyFor(LINKED)), stateKeys.pending(conversationKeyFor(LINKED)));
});

async function ask(from: string, body: string, expected: number) {
  await harness.sendWhatsapp({ from, body });
  const messages = await harness.twilio.waitForMessages(expected, 10_000);
  const last = messages.at(-1);
  if (last?.body.startsWith('Which company')) expect(last.choices?.map((choice) => choice.title)).toEqual(['Acme Ltd', 'Acme Iberia SL']);
  return last?.body;
}
const session = async () => JSON.parse((await harness.services.redis.get(stateKeys.session(conversationKeyFor(LINKED)))) ?? '{}') as Record<string, unknown>;

describe('a customer linked to several companies', () => {
  test('is asked with a numbered list and picks one by number', async () => {
    expect(await ask(LINKED, 'where is my invoice 1042?', 1)).toBe(LIST);
    const judgeCalls = harness.models.calls.filter((call) => call.structured).length;
    expect(await ask(LINKED, '2', 2)).toBe("Thanks, looking at Acme Iberia SL's invoices now.");
    expect(harness.models.calls.filter((call) => call.structured).length).toBe(judgeCalls);
    expect(await session()).toEqual({ entityId: 'acme-es', entityName: 'Acme Iberia SL' });
    expect(await ask(LINKED, 'and invoice 1043?', 3)).toBe('Answer about Acme Iberia SL.');
  });

  test('picks one by name', async () => {
    expect(await ask(LINKED, 'what is my invoice balance?', 1)).toBe(LIST);
    expect(await ask(LINKED, 'acme ltd', 2)).toBe("Thanks, looking at Acme Ltd's invoices now.");
    expect(await session()).toEqual({ entityId: 'acme-uk', entityName: 'Acme Ltd' });
  });

  test('an answer that matches nothing is asked again once, then the conversation carries on without one', async () => {
    expect(await ask(LINKED, 'did you get my payment for the invoice?', 1)).toBe(LIST);
    expect(await ask(LINKED, 'banana', 2)).toBe("Sorry, I didn't catch which one. Reply with a number from 1 to 2, or the company's name.");
    expect(await ask(LINKED, 'kiwi', 3)).toBe('No problem, let us continue without a company.');
    expect(await session()).toEqual({});
  });
});

describe('an unlinked number', () => {
  test('asking for invoices is told how to link, and never gets account data', async () => {
    const reply = await ask('whatsapp:+447700903999', 'where is my invoice 1042?', 1);
    expect(reply).toBe('Your number is not linked to an account yet.');
    const system = harness.models.replyCalls().at(-1)!.system;
    expect(system).toContain('This number is not linked to a customer account');
    expect(system).toContain('do not look up or guess records');
  });
});
