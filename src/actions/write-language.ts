/**
 * The language property each write's schema gains as the model sees it: the language the
 * customer writes in (ISO 639-1), which the service's own words are rendered in. Taken off before
 * the arguments are frozen, never sent to the MCP server; a write declaring an argument of that
 * name keeps its own.
 */
import { z } from 'zod';
import type { ToolCallContext } from '../contracts/tool.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import { languageOf, type Language } from '../words/language.js';

const InputSchema = z.record(z.string(), z.unknown());

export const LANGUAGE_PROPERTY = 'language';
const LANGUAGE_SCHEMA = {
  type: 'string',
  description: 'ISO 639-1 code of the language the customer writes in (e.g. "es"); the confirmation is shown in it.',
};

/** The language property a write's schema gains, unless it has an argument of that name (then its words follow the channel's locale). */
export const languagePropertyOf = (write: McpWriteTool): string | undefined => {
  const properties = write.inputSchema.jsonSchema.properties;
  return typeof properties === 'object' && properties !== null && Object.hasOwn(properties, LANGUAGE_PROPERTY) ? undefined : LANGUAGE_PROPERTY;
};

/** The write's schema as offered to the model: the language property added (one object per write listing). */
const offeredSchemas = new WeakMap<McpWriteTool, { jsonSchema: Record<string, unknown> }>();
export function offeredSchema(write: McpWriteTool): { jsonSchema: Record<string, unknown> } {
  let offered = offeredSchemas.get(write);
  if (!offered) {
    const properties = write.inputSchema.jsonSchema.properties;
    offered = languagePropertyOf(write)
      ? { jsonSchema: { ...write.inputSchema.jsonSchema, properties: { ...(properties as object | undefined), [LANGUAGE_PROPERTY]: LANGUAGE_SCHEMA } } }
      : write.inputSchema;
    offeredSchemas.set(write, offered);
  }
  return offered;
}

/** The model's arguments without the language property, and the language the service's words are in (the model's code, else the channel's locale, else English). */
export function splitLanguage(write: McpWriteTool, raw: unknown, context: ToolCallContext): { input: Record<string, unknown>; language: Language } {
  const input = InputSchema.parse(raw ?? {});
  if (!languagePropertyOf(write)) return { input, language: languageOf(context.metadata.language) };
  const { [LANGUAGE_PROPERTY]: written, ...rest } = input;
  return { input: rest, language: languageOf(written, context.metadata.language) };
}
