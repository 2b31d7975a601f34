/**
 * Posts a notice to a Slack-compatible webhook. 2xx is delivered; a 4xx other than 408/429
 * will never succeed (permanent); anything else, timeouts included, may succeed on retry.
 * The hand-off id goes along as an idempotency key for receivers that dedupe.
 */
import { DependencyError, errorText, isRetryableStatus } from '../errors/index.js';
import type { Notice } from './notice.js';

/** A hand-off notice did not go out; `retryable` says whether the same send may succeed later. */
export class NoticeSendError extends DependencyError {}

export async function postWebhookNotice(url: string, notice: Notice, idempotencyKey: string, timeoutMs = 10_000): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify(notice.webhook),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
  } catch (error) {
    throw new NoticeSendError(`webhook unreachable: ${errorText(error)}`, true, { cause: error });
  }
  await response.arrayBuffer().catch(() => undefined);
  if (response.ok) return;
  throw new NoticeSendError(`webhook answered ${response.status}`, isRetryableStatus(response.status, { timeoutRetryable: true }));
}
