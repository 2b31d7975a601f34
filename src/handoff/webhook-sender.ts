/**
 * Posts a notice to a Slack-compatible webhook. 2xx is delivered; a 4xx other than 408/429
 * will never succeed (permanent); anything else, timeouts included, may succeed on retry.
 * The hand-off id goes along as an idempotency key for receivers that dedupe.
 */
import type { Notice } from './notice.js';

export class NoticeSendError extends Error {
  override name = 'NoticeSendError';
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

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
    throw new NoticeSendError(`webhook unreachable: ${error instanceof Error ? error.message : String(error)}`, true);
  }
  await response.arrayBuffer().catch(() => undefined);
  if (response.ok) return;
  const permanent = response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429;
  throw new NoticeSendError(`webhook answered ${response.status}`, !permanent);
}
