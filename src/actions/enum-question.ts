/**
 * A write's own enum values as choices: when the model calls a write leaving out a required
 * argument whose JSON schema is a short list of strings (`enum`, or `oneOf`/`anyOf` of `const`s),
 * or writing a value outside that list, the service asks the customer which one — its question
 * rendered from the argument's schema, the options the schema's own values (labelled by
 * `enumNames` or the `oneOf` titles when the schema has them) — before anything is proposed.
 *
 * Must never fill an argument with anything but one of the schema's own values, and never take
 * a tap on another question's option for an answer to this one (each option's id names its
 * question). The tool's title, the argument's and the options' labels (the MCP server's words)
 * are shown as safe lines (`plainLine`).
 */
import { choiceLines } from '../contracts/choices.js';
import type { Choice } from '../contracts/tool.js';
import { plainLine } from './sanitise.js';
import { argumentTitle } from './summary.js';
import type { Language } from '../words/language.js';
import { wordsFor } from './words.js';

/** Most options a question offers (a WhatsApp list's rows); a longer enum is left to the model and the server. */
const MAX_OPTIONS = 10;
/** A list row's characters on WhatsApp (the longest a tappable label may be). */
const LABEL_CHARS = 24;
/** The most characters of the tool's title (and the argument's) the question shows. */
const ACTION_CHARS = 120;

export interface EnumOption {
  value: string;
  label: string;
}

/** The argument the customer is asked for, and the values it may take. */
export interface EnumArgument {
  name: string;
  title: string;
  options: EnumOption[];
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

/** What an option is shown as: its label, else its value, as a safe line (the MCP server wrote both). */
const shownLabel = (label: unknown, value: string): string => plainLine(text(label) ?? '') || plainLine(value) || value;

/** The options of one property's schema, or undefined when it is not a short list of strings. */
export function enumOptions(schema: unknown): EnumOption[] | undefined {
  if (!isObject(schema)) return undefined;
  let options: EnumOption[] | undefined;
  if (Array.isArray(schema.enum)) {
    const values = schema.enum;
    if (!values.every((value): value is string => typeof value === 'string')) return undefined;
    const names = Array.isArray(schema.enumNames) && schema.enumNames.length === values.length ? schema.enumNames : undefined;
    options = values.map((value, index) => ({ value, label: shownLabel(names?.[index], value) }));
  } else {
    const variants = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined;
    if (!variants) return undefined;
    options = [];
    for (const variant of variants) {
      if (!isObject(variant)) return undefined;
      const value = typeof variant.const === 'string' ? variant.const : Array.isArray(variant.enum) && variant.enum.length === 1 ? variant.enum[0] : undefined;
      if (typeof value !== 'string') return undefined;
      options.push({ value, label: shownLabel(variant.title, value) });
    }
  }
  if (options.length === 0 || options.length > MAX_OPTIONS) return undefined;
  if (new Set(options.map((option) => option.value)).size !== options.length) return undefined;
  return options;
}

/**
 * The first enum argument the model left unsettled: required and missing, or written with a
 * value outside its list. Scoped arguments are the service's to fill, never asked.
 */
export function unsettledEnum(jsonSchema: JsonObject, args: Readonly<JsonObject>, scoped: readonly string[]): EnumArgument | undefined {
  const properties = isObject(jsonSchema.properties) ? jsonSchema.properties : {};
  const required = Array.isArray(jsonSchema.required) ? jsonSchema.required : [];
  for (const [name, schema] of Object.entries(properties)) {
    if (scoped.includes(name)) continue;
    const options = enumOptions(schema);
    if (!options) continue;
    const value = Object.hasOwn(args, name) ? args[name] : undefined;
    const settled = value === undefined ? !required.includes(name) : options.some((option) => option.value === value);
    if (!settled) return { name, title: argumentTitle(name, schema), options };
  }
  return undefined;
}

/** The options as taps: each id names the question (`arg:<question>:<index>`), each label cut to a list row. */
export function enumChoices(questionId: string, options: readonly EnumOption[]): Choice[] {
  return options.map((option, index) => ({
    id: `arg:${questionId}:${index}`,
    label: option.label.length > LABEL_CHARS ? `${option.label.slice(0, LABEL_CHARS - 1)}…` : option.label,
  }));
}

export function enumQuestionText(input: { action: string; argument: string; choices: readonly Choice[]; language: Language }): string {
  const words = wordsFor(input.language);
  const head = words.choose.replace('{action}', plainLine(input.action, ACTION_CHARS)).replace('{argument}', plainLine(input.argument, ACTION_CHARS));
  return `${head}\n\n${choiceLines(input.choices)}\n${words.chooseHint}`;
}

/** What a tap names: this question's option (by index), or `foreign` (another question's, or made up). */
export function tappedOption(choice: string, questionId: string, options: readonly EnumOption[]): EnumOption | 'foreign' {
  const tapped = /^arg:(.+):(\d+)$/.exec(choice);
  const option = tapped && tapped[1] === questionId ? options[Number(tapped[2])] : undefined;
  return option ?? 'foreign';
}

const normalise = (value: string) =>
  value
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[\u0660-\u0669]/g, (digit) => String(digit.charCodeAt(0) - 0x0660))
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/** The option a typed answer names: its number, or its value or label (whole words, one option only); undefined for anything else. */
export function typedOption(answer: string, options: readonly EnumOption[]): EnumOption | undefined {
  const typed = normalise(answer);
  if (!typed) return undefined;
  if (/^\d+$/.test(typed)) return options[Number(typed) - 1];
  const names = (option: EnumOption) => [normalise(option.value), normalise(option.label)].filter(Boolean);
  const exact = options.filter((option) => names(option).includes(typed));
  if (exact.length === 1) return exact[0];
  // "the evening one, please": a short answer naming exactly one option.
  if (typed.split(' ').length > 4) return undefined;
  const padded = ` ${typed} `;
  const named = options.filter((option) => names(option).some((name) => padded.includes(` ${name} `)));
  return named.length === 1 ? named[0] : undefined;
}
