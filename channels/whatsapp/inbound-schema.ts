/**
 * The shapes of Twilio's WhatsApp webhooks: an inbound message and a delivery status callback.
 * Only the fields the service uses are required; Twilio adds fields over time and extra ones pass.
 */
import { z } from 'zod';
import { formatIssues } from '../../src/errors/issues.js';

const whatsappAddress = z.string().regex(/^whatsapp:\+[1-9]\d{6,14}$/, 'expected whatsapp:+<E.164 number>');
const messageSid = z.string().regex(/^(SM|MM)[0-9a-fA-F]{32}$/, 'expected a Twilio message SID');

const MAX_INBOUND_BODY_CHARS = 4096;

export const TwilioInboundSchema = z.object({
  MessageSid: messageSid,
  AccountSid: z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'expected an Account SID'),
  From: whatsappAddress,
  To: whatsappAddress,
  Body: z.string().max(MAX_INBOUND_BODY_CHARS, `Body exceeds ${MAX_INBOUND_BODY_CHARS} characters`).default(''),
  NumMedia: z.coerce.number().int().min(0).max(10).default(0),
  ProfileName: z.string().max(256).optional(),
  WaId: z.string().max(32).optional(),
  MessageType: z.string().max(32).optional(),
  /** The message this one replies to (WhatsApp's reply-to): how a teammate answers a notice. */
  OriginalRepliedMessageSid: messageSid.optional(),
  /** A tapped quick-reply button's id / a chosen list row's id (the choice's `id`); `Body` is its label. */
  ButtonPayload: z.string().max(200).optional(),
  ListId: z.string().max(200).optional(),
});
export type TwilioInbound = z.infer<typeof TwilioInboundSchema>;

export const TwilioStatusSchema = z.object({
  MessageSid: messageSid,
  AccountSid: z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'expected an Account SID'),
  MessageStatus: z.enum([
    'accepted',
    'scheduled',
    'queued',
    'sending',
    'sent',
    'delivered',
    'read',
    'failed',
    'undelivered',
    'canceled',
    'receiving',
    'received',
  ]),
  ErrorCode: z
    .string()
    .regex(/^\d{1,6}$/)
    .optional(),
  ErrorMessage: z.string().max(1024).optional(),
});
export type TwilioStatus = z.infer<typeof TwilioStatusSchema>;

const mediaUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).max(2048);
const mediaContentType = z.string().min(1).max(128);

/** One schema per media count (`NumMedia` is at most 10), built on first use: building one costs more than parsing. */
const mediaSchemas = new Map<number, z.ZodObject>();

function mediaSchema(count: number): z.ZodObject {
  let schema = mediaSchemas.get(count);
  if (!schema) {
    const shape: Record<string, typeof mediaUrl | typeof mediaContentType> = {};
    for (let index = 0; index < count; index += 1) {
      shape[`MediaUrl${index}`] = mediaUrl;
      shape[`MediaContentType${index}`] = mediaContentType;
    }
    schema = z.object(shape);
    mediaSchemas.set(count, schema);
  }
  return schema;
}

/**
 * The media an inbound message carries: `MediaUrl{i}` and `MediaContentType{i}` for each of
 * `NumMedia` (fetched later by the worker, never by the webhook), or a line naming the bad field.
 */
export function twilioMedia(params: Record<string, string>, count: number): { media: { url: string; contentType: string }[] } | { error: string } {
  if (count === 0) return { media: [] };
  const parsed = mediaSchema(count).safeParse(params);
  if (!parsed.success) return { error: describeIssues(parsed.error) };
  return {
    media: Array.from({ length: count }, (_, index) => ({
      url: String(parsed.data[`MediaUrl${index}`]),
      contentType: String(parsed.data[`MediaContentType${index}`]),
    })),
  };
}

/** Flattens zod issues into one line a caller can act on, naming the fields. */
export function describeIssues(error: z.ZodError): string {
  return formatIssues(error.issues, 'body');
}
