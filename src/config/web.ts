/** The web widget channel: its sites, token secret, rate limits, signed identities and attachment uploads. */
import { z } from 'zod';
import { positiveInt } from './fields.js';

export const webFields = {
  WEB_SITES: z.string().optional(),
  WIDGET_TOKEN_SECRET: z.string().min(32, 'expected at least 32 characters').optional(),
  WEB_MAX_MESSAGE_CHARS: positiveInt(2000),
  WEB_VISITOR_MESSAGES_PER_MINUTE: positiveInt(20),
  WEB_IP_MESSAGES_PER_MINUTE: positiveInt(60),
  WEB_VISITOR_REQUESTS_PER_MINUTE: positiveInt(60),
  WEB_IP_REQUESTS_PER_MINUTE: positiveInt(300),
  WEB_STREAMS_PER_VISITOR: positiveInt(5),
  WEB_VISITOR_UPLOADS_PER_MINUTE: positiveInt(10),
  WEB_IP_UPLOADS_PER_MINUTE: positiveInt(30),
  // How long a site's signed identity (data-user-hash with data-user-ts) is accepted after its issue time.
  WEB_IDENTITY_MAX_AGE_SECONDS: positiveInt(3600).pipe(z.number().max(7 * 24 * 60 * 60, 'expected at most 604800 (7 days)')),
  // Whether a data-user-hash without data-user-ts (the form before issue times: it never expires) is accepted.
  WEB_IDENTITY_LEGACY: z.stringbool({ error: 'expected true or false' }).default(false),
  // A visitor's uploads no message has named yet: at most this many, and this many bytes together.
  WEB_VISITOR_PENDING_UPLOADS: positiveInt(10),
  WEB_VISITOR_PENDING_UPLOAD_BYTES: positiveInt(96 * 1024 * 1024),
  // An upload no message named within this long is deleted (decimals allowed).
  UPLOAD_UNCLAIMED_TTL_MINUTES: z.coerce
    .number({ error: 'expected a number of minutes' })
    .positive()
    .max(24 * 60)
    .default(30),
};

export interface WebConfig {
  /** Raw JSON of the sites list; parsed and validated by the web channel. */
  sitesJson: string | undefined;
  tokenSecret: string;
  maxMessageChars: number;
  visitorMessagesPerMinute: number;
  ipMessagesPerMinute: number;
  /** Sessions, history reads, new chats and event-stream connections, together. */
  visitorRequestsPerMinute: number;
  ipRequestsPerMinute: number;
  streamsPerVisitor: number;
  /** Widget attachments (`/api/widget/uploads`) per visitor and per IP. */
  visitorUploadsPerMinute: number;
  ipUploadsPerMinute: number;
  /** A site's signed identity is accepted this long after its `data-user-ts`. */
  identityMaxAgeSeconds: number;
  /** A `data-user-hash` without `data-user-ts` (never expires) is accepted: for sites not yet sending the issue time. */
  identityLegacy: boolean;
  /** A visitor's uploads no message named yet: how many, and their bytes together. */
  visitorPendingUploads: number;
  visitorPendingUploadBytes: number;
}

type WebEnv = z.infer<z.ZodObject<typeof webFields>>;

/** `derivedSecret`: the widget's key when WIDGET_TOKEN_SECRET is not set. */
export const webConfig = (env: WebEnv, derivedSecret: string): WebConfig => ({
  sitesJson: env.WEB_SITES,
  tokenSecret: env.WIDGET_TOKEN_SECRET ?? derivedSecret,
  maxMessageChars: env.WEB_MAX_MESSAGE_CHARS,
  visitorMessagesPerMinute: env.WEB_VISITOR_MESSAGES_PER_MINUTE,
  ipMessagesPerMinute: env.WEB_IP_MESSAGES_PER_MINUTE,
  visitorRequestsPerMinute: env.WEB_VISITOR_REQUESTS_PER_MINUTE,
  ipRequestsPerMinute: env.WEB_IP_REQUESTS_PER_MINUTE,
  streamsPerVisitor: env.WEB_STREAMS_PER_VISITOR,
  visitorUploadsPerMinute: env.WEB_VISITOR_UPLOADS_PER_MINUTE,
  ipUploadsPerMinute: env.WEB_IP_UPLOADS_PER_MINUTE,
  identityMaxAgeSeconds: env.WEB_IDENTITY_MAX_AGE_SECONDS,
  identityLegacy: env.WEB_IDENTITY_LEGACY,
  visitorPendingUploads: env.WEB_VISITOR_PENDING_UPLOADS,
  visitorPendingUploadBytes: env.WEB_VISITOR_PENDING_UPLOAD_BYTES,
});
