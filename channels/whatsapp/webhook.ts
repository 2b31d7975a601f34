/**
 * Twilio's WhatsApp webhooks: inbound messages and delivery status callbacks. Each request is
 * signature-checked before anything else is read; an inbound message is handed to the intake
 * (inbox + queue) and answered at once with empty TwiML — the model is never awaited here.
 */
import express, { type Request, type Response, type Router } from 'express';
import { ackTimer } from '../../src/http/ack-timer.js';
import type { Logger } from '../../src/logger.js';
import type { Metrics } from '../../src/metrics.js';
import type { InboundMessage } from '../../src/contracts/index.js';
import type { DeliveryStatus, TranscriptStore } from '../../src/store/transcript-store.js';
import type { TeammateInbound } from '../../src/takeover/teammate-router.js';
import { describeIssues, TwilioInboundSchema, TwilioStatusSchema, twilioMedia, type TwilioStatus } from './inbound-schema.js';
import { verifyTwilioSignature, type SignatureSettings } from './signature.js';
import { partOfCallback } from './status-callback.js';

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
export const WHATSAPP_CHANNEL_ID = 'whatsapp';

export interface InboundIntake {
  /** Queues a message for its conversation; 'duplicate' when its id was already accepted. */
  accept(message: InboundMessage): Promise<'accepted' | 'duplicate'>;
}

export type DeliveryStatusSink = Pick<TranscriptStore, 'updateDeliveryStatus'>;

export interface WhatsappWebhookOptions {
  signature: SignatureSettings;
  accountSid: string;
  /** Our WhatsApp sender (`whatsapp:+…`): a message to any other sender of the account is not ours to answer. */
  sender: string;
  intake: InboundIntake;
  statuses: DeliveryStatusSink;
  /** Team members' numbers: their messages answer hand-offs, never start customer turns. */
  teammates?: TeammateInbound;
  logger: Logger;
  metrics: Metrics;
}

const statusMap: Partial<Record<TwilioStatus['MessageStatus'], DeliveryStatus>> = {
  accepted: 'queued',
  scheduled: 'queued',
  queued: 'queued',
  sending: 'queued',
  sent: 'sent',
  delivered: 'delivered',
  read: 'read',
  failed: 'failed',
  undelivered: 'undelivered',
  canceled: 'failed',
};

export function conversationKeyFor(address: string): string {
  return `${WHATSAPP_CHANNEL_ID}:${address.replace(/^whatsapp:/, '')}`;
}

const SIGNATURE_ERRORS = {
  missing: 'missing X-Twilio-Signature header',
  mismatch: 'invalid X-Twilio-Signature',
  algorithm: 'unsupported signature algorithm in X-Twilio-Webhooks-Signature-Settings',
} as const;

/** TwiML answering the sender at once (a teammate told why their message went nowhere). */
function twimlMessage(text: string): string {
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Message>${escaped}</Message></Response>`;
}

function reject(response: Response, status: number, error: string): void {
  response.status(status).json({ error });
}

/** Form fields as strings; undefined when a field repeats (Twilio never repeats one). */
function formParams(request: Request): Record<string, string> | undefined {
  if (!request.is('application/x-www-form-urlencoded')) return undefined;
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null) return undefined;
  const params: Record<string, string> = {};
  for (const [key, value] of Object.entries(body)) {
    if (typeof value !== 'string') return undefined;
    params[key] = value;
  }
  return params;
}

/** A signed, well-formed status callback: the part's status recorded (`part`: the one its URL names), logged, and a failure counted. */
async function recordStatus(options: WhatsappWebhookOptions, callback: TwilioStatus, part: string | undefined): Promise<void> {
  const { logger, metrics } = options;
  const { MessageSid, MessageStatus, ErrorCode, ErrorMessage } = callback;
  const status = statusMap[MessageStatus];
  if (!status) return;
  const known = await options.statuses.updateDeliveryStatus({
    channelMessageId: MessageSid,
    ...(part ? { messageId: part } : {}),
    status,
    ...(ErrorCode ? { errorCode: ErrorCode } : {}),
    ...(ErrorMessage ? { errorMessage: ErrorMessage } : {}),
  });
  logger.info(known ? 'delivery-status-recorded' : 'delivery-status-unknown-message', {
    messageSid: MessageSid,
    status,
    ...(ErrorCode ? { errorCode: ErrorCode } : {}),
  });
  if (status === 'failed' || status === 'undelivered') {
    metrics.increment('delivery_failed_total', { channel: WHATSAPP_CHANNEL_ID, code: ErrorCode ?? 'none' });
  }
}

export function createWhatsappWebhookRouter(options: WhatsappWebhookOptions): Router {
  const { logger, metrics } = options;
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 100 });

  const authenticate = (request: Request, response: Response, kind: string): Record<string, string> | undefined => {
    const params = formParams(request);
    if (!params) {
      metrics.increment('webhook_rejected_total', { kind, reason: 'content_type' });
      logger.warn('webhook-rejected', { kind, reason: 'content-type', contentType: request.get('content-type') });
      reject(response, 415, 'expected an application/x-www-form-urlencoded body with single-valued fields');
      return undefined;
    }
    const check = verifyTwilioSignature(request, params, options.signature);
    if (!check.ok) {
      metrics.increment('webhook_rejected_total', { kind, reason: `signature_${check.reason}` });
      logger.warn('webhook-rejected', { kind, reason: `signature-${check.reason}`, ip: request.ip });
      reject(response, 403, SIGNATURE_ERRORS[check.reason]);
      return undefined;
    }
    if (params.AccountSid !== undefined && params.AccountSid !== options.accountSid) {
      logger.warn('webhook-rejected', { kind, reason: 'account-mismatch' });
      reject(response, 403, 'AccountSid does not match this service');
      return undefined;
    }
    return params;
  };

  router.post('/webhooks/whatsapp', ackTimer(metrics, WHATSAPP_CHANNEL_ID), form, async (request, response) => {
    const params = authenticate(request, response, 'inbound');
    if (!params) return;
    const parsed = TwilioInboundSchema.safeParse(params);
    if (!parsed.success) {
      const error = describeIssues(parsed.error);
      metrics.increment('webhook_rejected_total', { kind: 'inbound', reason: 'malformed' });
      logger.warn('webhook-rejected', { kind: 'inbound', reason: 'malformed', error });
      reject(response, 400, error);
      return;
    }
    const inbound = parsed.data;
    if (inbound.To !== options.sender) {
      // Signed by Twilio for another sender of this account (its webhook points here by mistake):
      // answering would reply from our number. 403, which Twilio does not retry and shows in its
      // debugger for that sender, where the misconfiguration can be fixed.
      metrics.increment('webhook_rejected_total', { kind: 'inbound', reason: 'to_mismatch' });
      logger.warn('webhook-rejected', { kind: 'inbound', reason: 'to-mismatch', to: inbound.To, messageSid: inbound.MessageSid });
      reject(response, 403, "To is not this service's WhatsApp sender");
      return;
    }
    if (options.teammates?.isTeammate(inbound.From)) {
      // A team member: never a customer turn, whatever they wrote.
      const routed = inbound.Body.trim()
        ? await options.teammates.route({
            from: inbound.From,
            text: inbound.Body,
            messageId: inbound.MessageSid,
            ...(inbound.OriginalRepliedMessageSid ? { repliedTo: inbound.OriginalRepliedMessageSid } : {}),
          })
        : { reply: 'Only text reaches the customer: write your answer as a message.' };
      metrics.increment('inbound_total', { channel: WHATSAPP_CHANNEL_ID, outcome: routed.reply ? 'teammate_refused' : 'teammate' });
      logger.info('teammate-inbound', { messageSid: inbound.MessageSid, routed: !routed.reply });
      response.type('text/xml').send(routed.reply ? twimlMessage(routed.reply) : EMPTY_TWIML);
      return;
    }
    const media = twilioMedia(params, inbound.NumMedia);
    if ('error' in media) {
      const { error } = media;
      metrics.increment('webhook_rejected_total', { kind: 'inbound', reason: 'malformed' });
      logger.warn('webhook-rejected', { kind: 'inbound', reason: 'malformed', error });
      reject(response, 400, error);
      return;
    }
    // Media is fetched by the worker (with the account's credentials), never here: the webhook answers at once.
    const text = inbound.Body.trim();
    if (!text && media.media.length === 0) {
      logger.info('inbound-ignored', { messageSid: inbound.MessageSid, reason: 'empty' });
      response.type('text/xml').send(EMPTY_TWIML);
      return;
    }
    const message: InboundMessage = {
      channel: WHATSAPP_CHANNEL_ID,
      conversationKey: conversationKeyFor(inbound.From),
      messageId: inbound.MessageSid,
      from: { address: inbound.From, ...(inbound.ProfileName ? { displayName: inbound.ProfileName } : {}) },
      text,
      receivedAt: Date.now(),
      metadata: {
        ...(inbound.ProfileName ? { profileName: inbound.ProfileName } : {}),
        ...(inbound.WaId ? { waId: inbound.WaId } : {}),
        to: inbound.To,
        // A tap: the choice's id (checked by whatever asked, against its own question, never trusted as such).
        ...(inbound.ButtonPayload || inbound.ListId ? { choice: inbound.ButtonPayload || inbound.ListId || '' } : {}),
      },
      ...(media.media.length > 0 ? { media: media.media } : {}),
    };
    const outcome = await options.intake.accept(message);
    metrics.increment('inbound_total', { channel: WHATSAPP_CHANNEL_ID, outcome });
    logger.info(outcome === 'accepted' ? 'inbound-accepted' : 'inbound-duplicate', {
      messageSid: inbound.MessageSid,
      conversationKey: message.conversationKey,
    });
    response.type('text/xml').send(EMPTY_TWIML);
  });

  router.post('/webhooks/whatsapp/status', form, async (request, response) => {
    const params = authenticate(request, response, 'status');
    if (!params) return;
    const parsed = TwilioStatusSchema.safeParse(params);
    if (!parsed.success) {
      const error = describeIssues(parsed.error);
      logger.warn('webhook-rejected', { kind: 'status', reason: 'malformed', error });
      reject(response, 400, error);
      return;
    }
    // The part the callback is about, named by its own (signed) URL; none for messages sent without it.
    const named = partOfCallback(request.query, WHATSAPP_CHANNEL_ID);
    if (!named.ok) {
      logger.warn('webhook-rejected', { kind: 'status', reason: 'malformed', error: named.error });
      reject(response, 400, named.error);
      return;
    }
    await recordStatus(options, parsed.data, named.part);
    response.status(204).end();
  });

  return router;
}
