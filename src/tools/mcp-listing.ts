/**
 * How the MCP tool source reads a listed tool: its category (declared in `_meta.category`, else
 * the operator's longest matching name prefix, else the default) and the schema the model sees
 * (the scoped arguments, which the service binds to the caller, left out).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

export function deriveToolCategory(tool: Tool, prefixes: Readonly<Record<string, string>>, defaultCategory: string): string {
  const declared = tool._meta?.category;
  if (typeof declared === 'string' && declared.trim() !== '') return declared;
  let best: { prefix: string; category: string } | undefined;
  for (const [prefix, category] of Object.entries(prefixes)) {
    if (tool.name.startsWith(prefix) && prefix.length > (best?.prefix.length ?? -1)) best = { prefix, category };
  }
  return best?.category ?? defaultCategory;
}

/** The tool's JSON schema without its scoped arguments, and the argument names left for the model. */
export function modelFacingSchema(
  schema: Tool['inputSchema'],
  hidden: readonly string[],
): { jsonSchema: Record<string, unknown>; declared: Set<string> | undefined } {
  if (hidden.length === 0) {
    return { jsonSchema: schema, declared: schema.properties ? new Set(Object.keys(schema.properties)) : undefined };
  }
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([name]) => !hidden.includes(name)));
  const required = (schema.required ?? []).filter((name) => !hidden.includes(name));
  return {
    jsonSchema: { ...schema, properties, ...(schema.required ? { required } : {}) },
    declared: new Set(Object.keys(properties)),
  };
}
