/**
 * zod issues as the admin API reports them: a dotted field path and zod's message. Only the
 * path and the message leave the process — never the rejected value.
 */
import type { z } from 'zod';

export interface FieldIssue {
  /** Dotted path into the request (`entities.2.id`), or `(body)` for the body as a whole. */
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
