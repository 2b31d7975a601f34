/**
 * What the customer is asked to confirm, rendered by the service from the tool's title and the
 * frozen arguments — never the model's wording — with the answers they may tap or type. Every
 * piece the service did not write (the title, argument names and titles, values, whom it is for)
 * goes in as a safe line (`plainLine`: no bidi controls, invisible characters, line breaks or
 * channel markup), so the summary reads as what will run.
 */
import { SUMMARY_DETAIL_MARK } from '../contracts/action-summary.js';
import { choiceLines } from '../contracts/choices.js';
import type { Caller, Choice } from '../contracts/tool.js';
import type { Language } from '../words/language.js';
import { plainLine } from './sanitise.js';
import { wordsFor } from './words.js';

/** The most characters of a value, an argument's title or the tool's title the summary shows. */
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
  return plainLine(typeof value === 'string' ? value : JSON.stringify(value), VALUE_CHARS);
}

const PropertiesSchema = (schema: Record<string, unknown>): Record<string, unknown> => {
  const properties = schema.properties;
  return typeof properties === 'object' && properties !== null ? (properties as Record<string, unknown>) : {};
};

/** How an argument is named to the customer: its JSON-schema `title`, else its name made readable ("orderNumber" → "Order number"); a safe line. */
export function argumentTitle(name: string, schema: unknown): string {
  const title = typeof schema === 'object' && schema !== null && 'title' in schema ? schema.title : undefined;
  const shown = typeof title === 'string' ? plainLine(title, VALUE_CHARS) : '';
  return shown || plainLine(humanize(name), VALUE_CHARS);
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
  const lines = [`${words.pleaseConfirm} ${plainLine(input.title, VALUE_CHARS)}`];
  const ordered = [...Object.keys(properties), ...Object.keys(input.args)].filter((name, index, all) => all.indexOf(name) === index);
  for (const name of ordered) {
    if (input.scoped.includes(name) || !Object.hasOwn(input.args, name) || input.args[name] === undefined) continue;
    lines.push(`${SUMMARY_DETAIL_MARK}${argumentTitle(name, properties[name])}: ${valueText(input.args[name])}`);
  }
  if (input.caller.kind === 'contact')
    lines.push(`${SUMMARY_DETAIL_MARK}${words.for} ${plainLine(input.caller.entity?.name ?? input.caller.name, VALUE_CHARS)}`);
  return lines.join('\n');
}

export function confirmationText(summary: string, choices: readonly Choice[], language: Language = 'en'): string {
  return `${summary}\n\n${choiceLines(choices)}\n${wordsFor(language).replyHint}`;
}
