/**
 * What the customer is asked to confirm, rendered by the service from the tool's title and the
 * frozen arguments — never the model's wording — with the answers they may tap or type.
 */
import { SUMMARY_DETAIL_MARK } from '../contracts/action-summary.js';
import { choiceLines } from '../contracts/choices.js';
import type { Caller, Choice } from '../contracts/tool.js';
import type { Language } from '../words/language.js';
import { wordsFor } from './words.js';

const VALUE_CHARS = 120;

const humanize = (name: string) => {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
};

function valueText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > VALUE_CHARS ? `${flat.slice(0, VALUE_CHARS - 1)}…` : flat;
}

const PropertiesSchema = (schema: Record<string, unknown>): Record<string, unknown> => {
  const properties = schema.properties;
  return typeof properties === 'object' && properties !== null ? (properties as Record<string, unknown>) : {};
};

/** How an argument is named to the customer: its JSON-schema `title`, else its name made readable ("orderNumber" → "Order number"). */
export function argumentTitle(name: string, schema: unknown): string {
  const title = typeof schema === 'object' && schema !== null && 'title' in schema ? schema.title : undefined;
  return typeof title === 'string' && title.trim() ? title.trim() : humanize(name);
}

/** The confirm/cancel answers of an action: their ids name the action, so a tap on another one is told apart. */
export function confirmationChoices(actionId: string, language: Language = 'en'): Choice[] {
  const words = wordsFor(language);
  return [
    { id: `act:${actionId}:confirm`, label: words.confirm },
    { id: `act:${actionId}:cancel`, label: words.cancel },
  ];
}

export function renderSummary(input: {
  title: string;
  args: Readonly<Record<string, unknown>>;
  /** Arguments the runtime bound (shown as whom it is for, not by value). */
  scoped: readonly string[];
  jsonSchema: Record<string, unknown>;
  caller: Caller;
  language?: Language;
}): string {
  const words = wordsFor(input.language ?? 'en');
  const properties = PropertiesSchema(input.jsonSchema);
  const lines = [`${words.pleaseConfirm} ${input.title}`];
  const ordered = [...Object.keys(properties), ...Object.keys(input.args)].filter((name, index, all) => all.indexOf(name) === index);
  for (const name of ordered) {
    if (input.scoped.includes(name) || !Object.hasOwn(input.args, name) || input.args[name] === undefined) continue;
    lines.push(`${SUMMARY_DETAIL_MARK}${argumentTitle(name, properties[name])}: ${valueText(input.args[name])}`);
  }
  if (input.caller.kind === 'contact') lines.push(`${SUMMARY_DETAIL_MARK}${words.for} ${input.caller.entity?.name ?? input.caller.name}`);
  return lines.join('\n');
}

export function confirmationText(summary: string, choices: readonly Choice[], language: Language = 'en'): string {
  return `${summary}\n\n${choiceLines(choices)}\n${wordsFor(language).replyHint}`;
}
