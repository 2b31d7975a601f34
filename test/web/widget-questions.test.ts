/**
 * Which question of the history is open (`withQuestions`): the newest message with answers,
 * while nothing from the visitor came after it (in the history, or still waiting for its turn)
 * and it has not expired; an answered one names the choice tapped.
 */
import { expect, test } from '@jest/globals';
import type { MessageDetails } from '../../channels/web/event-log.js';
import { withQuestions } from '../../channels/web/history.js';

const choices = [
  { id: 'act:1:confirm', label: 'Confirm' },
  { id: 'act:1:cancel', label: 'Cancel' },
];
const question = { id: 'out:web:c:m1#1', role: 'assistant', text: 'Please confirm', at: 2_000 } as const;
const asked = (extra: Partial<MessageDetails> = {}) => new Map<string, MessageDetails>([[question.id, { at: 2_000, choices, ...extra }]]);

test('the newest question is open until it expires', () => {
  expect(withQuestions([question], asked({ choicesExpireAt: 10_000 }), 5_000)).toEqual([{ ...question, choices, choicesOpen: true, choicesExpireAt: 10_000 }]);
  expect(withQuestions([question], asked({ choicesExpireAt: 10_000 }), 10_000)).toEqual([{ ...question, choices }]);
});

test('a visitor message after it (shown, or still waiting for its turn) closes it; a tapped choice is named', () => {
  const answer = { id: 'm2', role: 'visitor', text: 'Confirm', at: 3_000 } as const;
  const details = asked();
  details.set('m2', { at: 3_000, choice: 'act:1:confirm' });
  expect(withQuestions([question, answer], details, 5_000)).toEqual([{ ...question, choices, chosen: 'act:1:confirm' }, answer]);
  expect(withQuestions([question], details, 5_000)).toEqual([{ ...question, choices }]);
});

test('an older question is never open', () => {
  const newer = { id: 'out:web:c:m3#1', role: 'assistant', text: 'Which company?', at: 4_000 } as const;
  const details = asked();
  details.set(newer.id, { at: 4_000, choices: [{ id: 'co:1', label: 'Acme' }] });
  const [older, latest] = withQuestions([question, newer], details, 5_000);
  expect(older).toEqual({ ...question, choices });
  expect(latest).toMatchObject({ choicesOpen: true });
});
