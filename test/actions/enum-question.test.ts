/**
 * Which of a write's arguments the customer is asked for, and how their answer is read: an enum
 * (labelled by `enumNames` or `oneOf` titles when the schema has them) left out while required or
 * written outside its values; a tap only on this question's own options; a typed number, value or
 * label naming exactly one option. Pure functions: no services.
 */
import { describe, expect, test } from '@jest/globals';
import { enumChoices, enumOptions, tappedOption, typedOption, unsettledEnum } from '../../src/actions/enum-question.js';
import { actionLanguage } from '../../src/actions/words.js';

const schema = {
  type: 'object',
  properties: {
    orderNumber: { type: 'string' },
    slot: { type: 'string', enum: ['morning', 'afternoon', 'evening'], title: 'Delivery slot' },
    speed: {
      oneOf: [
        { const: 'std', title: 'Standard' },
        { const: 'exp', title: 'Express (next day)' },
      ],
    },
    colour: { type: 'string', enum: ['r', 'g'], enumNames: ['Red', 'Green'] },
    region: { type: 'string', enum: ['EU', 'US'] },
    customerId: { type: 'string', enum: ['CUST-ACME'] },
  },
  required: ['orderNumber', 'slot', 'speed', 'customerId'],
};

describe('unsettledEnum', () => {
  test('asks for a required enum left out, labelled by its title', () => {
    expect(unsettledEnum(schema, { orderNumber: '1', customerId: 'CUST-ACME' }, ['customerId'])).toEqual({
      name: 'slot',
      title: 'Delivery slot',
      options: [
        { value: 'morning', label: 'morning' },
        { value: 'afternoon', label: 'afternoon' },
        { value: 'evening', label: 'evening' },
      ],
    });
  });

  test('oneOf titles and enumNames label the options; an argument without a title is named from its key', () => {
    expect(unsettledEnum(schema, { slot: 'evening' }, [])).toMatchObject({
      name: 'speed',
      title: 'Speed',
      options: [
        { value: 'std', label: 'Standard' },
        { value: 'exp', label: 'Express (next day)' },
      ],
    });
    expect(unsettledEnum(schema, { slot: 'evening', speed: 'std', colour: 'blue' }, [])).toMatchObject({
      name: 'colour',
      options: [
        { value: 'r', label: 'Red' },
        { value: 'g', label: 'Green' },
      ],
    });
  });

  test('an optional enum left out, a valid value, a scoped argument and a long or non-string enum are never asked', () => {
    expect(unsettledEnum(schema, { slot: 'morning', speed: 'exp' }, ['customerId'])).toBeUndefined();
    const long = { type: 'string', enum: Array.from({ length: 11 }, (_, index) => `v${index}`) };
    expect(enumOptions(long)).toBeUndefined();
    expect(enumOptions({ enum: [1, 2] })).toBeUndefined();
    expect(enumOptions({ type: 'string' })).toBeUndefined();
  });
});

describe('answers', () => {
  const options = unsettledEnum(schema, { slot: 'evening' }, [])!.options;

  test("a tap counts only on this question's own options", () => {
    const choices = enumChoices('q1', options);
    expect(choices.map((choice) => choice.label)).toEqual(['Standard', 'Express (next day)']);
    expect(tappedOption(choices[1]!.id, 'q1', options)).toEqual({ value: 'exp', label: 'Express (next day)' });
    expect(tappedOption('arg:q2:1', 'q1', options)).toBe('foreign');
    expect(tappedOption('arg:q1:7', 'q1', options)).toBe('foreign');
    expect(tappedOption('act:q1:confirm', 'q1', options)).toBe('foreign');
  });

  test('a typed number, value or label (any case, accents, a few words) names one option; anything else none', () => {
    expect(typedOption('2', options)?.value).toBe('exp');
    expect(typedOption('٢', options)?.value).toBe('exp');
    expect(typedOption('STANDARD', options)?.value).toBe('std');
    expect(typedOption('exp', options)?.value).toBe('exp');
    expect(typedOption('express next day please', options)?.value).toBe('exp');
    expect(typedOption('3', options)).toBeUndefined();
    expect(typedOption('what does express cost compared to the standard one', options)).toBeUndefined();
    expect(typedOption('hello', options)).toBeUndefined();
  });
});

test('a language code is one of the catalogue, else English', () => {
  expect(actionLanguage('es')).toBe('es');
  expect(actionLanguage('pt-BR')).toBe('pt');
  expect(actionLanguage('xx', 'FR')).toBe('fr');
  expect(actionLanguage('it')).toBe('en');
  expect(actionLanguage(undefined, 42)).toBe('en');
});
