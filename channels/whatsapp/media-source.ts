/**
 * Where WhatsApp media may be fetched from: Twilio's `MediaUrl`s live on its API host and
 * need the account's credentials (HTTP basic auth); Twilio answers with a redirect to its CDN
 * (`mms.twiliocdn.com`, or S3 for media stored before HTTP auth was enforced), which gets no
 * credentials. With `TWILIO_API_BASE_URL` (tests, staging) that host is allowed too, and a
 * loopback one may redirect to loopback media servers. Any other host is refused (no SSRF
 * through a forged URL).
 */
import type { MediaSource } from '../../src/media/media-fetch.js';

const TWILIO_MEDIA_HOSTS = ['api.twilio.com', '*.twilio.com'];
const TWILIO_MEDIA_REDIRECT_HOSTS = ['*.twilio.com', '*.twiliocdn.com', '*.amazonaws.com'];
const LOOPBACK = /^(127\.0\.0\.1|localhost|\[::1\])$/;

export function whatsappMediaSource(settings: { accountSid: string; authToken: string; apiBaseUrl: string | undefined }): MediaSource {
  const base = settings.apiBaseUrl ? new URL(settings.apiBaseUrl) : undefined;
  const loopback = base !== undefined && LOOPBACK.test(base.hostname);
  return {
    hosts: [...TWILIO_MEDIA_HOSTS, ...(base ? [base.host] : [])],
    redirectHosts: [...TWILIO_MEDIA_REDIRECT_HOSTS, ...(base ? [base.host] : []), ...(loopback ? ['loopback'] : [])],
    credentials: { username: settings.accountSid, password: settings.authToken },
  };
}
