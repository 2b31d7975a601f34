/**
 * zod issues as the service reports them, everywhere (admin API, webhooks, the widget's
 * routes, configuration): a dotted field path and zod's message. Only the path and the
 * message leave the process — never the rejected value.
 */
import type { z } from 'zod';

export interface FieldIssue {
  /** Dotted path into the input (`entities.2.id`), or the caller's root name for the input as a whole. */
  path: string;
  message: string;
}

export function describeIssues(issues: readonly z.core.$ZodIssue[], root = '(body)'): FieldIssue[] {
  return issues.map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = issue.path.map(String).join('.');
    return { path: path || root, message: keys.length ? `unknown field${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}` : issue.message };
  });
}

/** The issues on one line a caller can act on: `path: message; path: message`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], root = '(body)'): string {
  return describeIssues(issues, root)
    .map((issue) => `${issue.path}: ${issue.message}`)
    .join('; ');
}
