/**
 * What the MCP tool source makes of a call's answer before handing it on: the result's text, or
 * its structured content, capped at a number of characters (results are untrusted text), and
 * how a failed call is described.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** Cuts `text` to at most `cap` characters, the marker saying how long it was included. */
export function capText(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const marker = `\n…[truncated: result was ${text.length} characters]`;
  let kept = text.slice(0, Math.max(0, cap - marker.length));
  // Don't leave half a surrogate pair at the cut.
  if (/[\uD800-\uDBFF]$/.test(kept)) kept = kept.slice(0, -1);
  return `${kept}${marker}`;
}

export function resultText(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type} content omitted]`)).join('\n');
}

/** Structured content when the server sent it and it fits the cap, else the capped text. */
export function cappedResult(result: CallToolResult, cap: number): unknown {
  if (result.structuredContent !== undefined) {
    const serialized = JSON.stringify(result.structuredContent);
    return serialized.length <= cap ? result.structuredContent : capText(serialized, cap);
  }
  return capText(resultText(result), cap);
}

/** Why a call was refused before reaching the server: the server is down, or the tool is not admitted. */
export function notCalledBecause(open: unknown, kind: 'read' | 'write'): string {
  return open ? `is not an admitted ${kind} tool; it was not called` : `was not called: the MCP server is not connected`;
}

export function isSchemaFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'issues' in error && Array.isArray(error.issues);
}
