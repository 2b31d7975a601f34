/**
 * The twilio library's client, optionally pointed at another API base URL
 * (`TWILIO_API_BASE_URL`) through a custom `httpClient` — the library's supported hook. Every
 * Twilio host (api., messaging., content.) is rewritten to that base, keeping the path.
 */
import twilio from 'twilio';
import type RequestClient from 'twilio/lib/base/RequestClient.js';

class RebasedRequestClient extends twilio.RequestClient {
  constructor(private readonly baseUrl: string) {
    super({ timeout: 15_000 });
  }

  override request<TData>(options: RequestClient.RequestOptions<TData>) {
    const original = new URL(options.uri);
    const rebased = new URL(`${original.pathname}${original.search}`, `${this.baseUrl}/`);
    return super.request<TData>({ ...options, uri: rebased.toString() });
  }
}

export function createTwilioClient(settings: { accountSid: string; authToken: string; apiBaseUrl?: string | undefined }): twilio.Twilio {
  return twilio(settings.accountSid, settings.authToken, {
    ...(settings.apiBaseUrl ? { httpClient: new RebasedRequestClient(settings.apiBaseUrl) } : { timeout: 15_000 }),
    autoRetry: false,
  });
}
