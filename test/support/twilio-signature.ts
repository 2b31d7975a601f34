// Owns what Twilio sends to the service in tests: the X-Twilio-Signature of a webhook
// (computed by the twilio library, exactly as Twilio signs), and realistic form bodies of an
// inbound WhatsApp message and of a message status callback.
import { randomUUID } from 'node:crypto';
import twilio from 'twilio';

export type TwilioParams = Record<string, string>;

/** An account SID for fixtures: "AC" and 32 hex digits, like a real one. */
export const fixtureAccountSid = 'AC0123456789abcdef0123456789abcdef';
/** The WhatsApp sender fixtures use by default (Twilio's WhatsApp sandbox number). */
const fixtureWhatsappSender = 'whatsapp:+14155238886';

/** A fresh SID with Twilio's shape: two-letter prefix and 32 hex digits (a UUID's: node's cached entropy, no system call per id, which the bench's senders felt). */
export function newTwilioSid(prefix = 'SM'): string {
  return prefix + randomUUID().replaceAll('-', '');
}

/** The X-Twilio-Signature Twilio sends for a POST of `params` to `url` (the full public URL, query included). */
export function signTwilioRequest(authToken: string, url: string, params: TwilioParams): string {
  return twilio.getExpectedTwilioSignature(authToken, url, params);
}

/** The form body Twilio posts, x-www-form-urlencoded. */
function toFormBody(params: TwilioParams): string {
  return new URLSearchParams(params).toString();
}

/** Headers and body for posting a signed webhook, e.g. with supertest: `.set(headers).send(body)`. */
export function signedWebhook(authToken: string, url: string, params: TwilioParams): { headers: Record<string, string>; body: string } {
  return {
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      'X-Twilio-Signature': signTwilioRequest(authToken, url, params),
      'I-Twilio-Idempotency-Token': randomUUID().replaceAll('-', ''),
      'User-Agent': 'TwilioProxy/1.1',
    },
    body: toFormBody(params),
  };
}

function whatsappAddress(number: string): string {
  return number.startsWith('whatsapp:') ? number : `whatsapp:${number}`;
}

function bareNumber(address: string): string {
  return address.replace(/^whatsapp:/, '');
}

export interface InboundMedia {
  url: string;
  contentType: string;
}

export interface InboundWhatsappOptions {
  /** The customer: "+15551234567" or "whatsapp:+15551234567". */
  from: string;
  /** The business's WhatsApp sender; defaults to fixtureWhatsappSender. */
  to?: string;
  body?: string;
  messageSid?: string;
  accountSid?: string;
  profileName?: string;
  /** The customer's WhatsApp ID: their number's digits without "+" unless given. */
  waId?: string;
  media?: InboundMedia[];
  /** A quick-reply button press: MessageType "button" with ButtonText/ButtonPayload. */
  button?: { text: string; payload: string };
  /** A shared location: MessageType "location". */
  location?: { latitude: number; longitude: number; address?: string; label?: string };
  /** The message the customer replied to (swipe-reply). */
  repliedTo?: { messageSid: string; sender: string };
  /** Adds ChannelMetadata (a JSON string), which Twilio sends on some accounts. */
  channelMetadata?: boolean;
  /** Any further fields, added last (they win). */
  extra?: TwilioParams;
}

function mediaMessageType(contentType: string): string {
  if (contentType.startsWith('image/')) return 'image';
  if (contentType.startsWith('audio/')) return 'audio';
  if (contentType.startsWith('video/')) return 'video';
  return 'document';
}

/** The form fields Twilio posts to the incoming-message webhook for one WhatsApp message. */
export function inboundWhatsappParams(options: InboundWhatsappOptions): TwilioParams {
  const from = whatsappAddress(options.from);
  const to = whatsappAddress(options.to ?? fixtureWhatsappSender);
  const media = options.media ?? [];
  const messageSid = options.messageSid ?? newTwilioSid(media.length > 0 ? 'MM' : 'SM');
  const accountSid = options.accountSid ?? fixtureAccountSid;
  const profileName = options.profileName ?? 'Test Customer';
  const waId = options.waId ?? bareNumber(from).replace(/^\+/, '');
  const firstMedia = media[0];
  let messageType = 'text';
  if (firstMedia !== undefined) messageType = mediaMessageType(firstMedia.contentType);
  if (options.button !== undefined) messageType = 'button';
  if (options.location !== undefined) messageType = 'location';

  const params: TwilioParams = {
    SmsMessageSid: messageSid,
    NumMedia: String(media.length),
    ProfileName: profileName,
    MessageType: messageType,
    SmsSid: messageSid,
    WaId: waId,
    SmsStatus: 'received',
    Body: options.body ?? '',
    To: to,
    NumSegments: '1',
    ReferralNumMedia: '0',
    MessageSid: messageSid,
    AccountSid: accountSid,
    From: from,
    ApiVersion: '2010-04-01',
  };
  media.forEach((item, index) => {
    params[`MediaContentType${index}`] = item.contentType;
    params[`MediaUrl${index}`] = item.url;
  });
  if (options.button !== undefined) {
    params.ButtonText = options.button.text;
    params.ButtonPayload = options.button.payload;
  }
  if (options.location !== undefined) {
    params.Latitude = String(options.location.latitude);
    params.Longitude = String(options.location.longitude);
    if (options.location.address !== undefined) params.Address = options.location.address;
    if (options.location.label !== undefined) params.Label = options.location.label;
  }
  if (options.repliedTo !== undefined) {
    params.OriginalRepliedMessageSid = options.repliedTo.messageSid;
    params.OriginalRepliedMessageSender = whatsappAddress(options.repliedTo.sender);
  }
  if (options.channelMetadata === true) {
    params.ChannelMetadata = JSON.stringify({ type: 'whatsapp', data: { context: { ProfileName: profileName, WaId: waId } } });
  }
  return { ...params, ...options.extra };
}

export type OutboundMessageStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'read' | 'undelivered' | 'failed';

export interface StatusCallbackOptions {
  messageSid: string;
  status: OutboundMessageStatus;
  /** The customer the message went to: "+15551234567" or "whatsapp:+15551234567". */
  to?: string;
  /** The business's WhatsApp sender; defaults to fixtureWhatsappSender. */
  from?: string;
  accountSid?: string;
  /** e.g. 63016 (outside the 24-hour window) for failed/undelivered. */
  errorCode?: number;
  errorMessage?: string;
  extra?: TwilioParams;
}

/** The form fields Twilio posts to a message's StatusCallback URL for a WhatsApp message. */
export function statusCallbackParams(options: StatusCallbackOptions): TwilioParams {
  const to = whatsappAddress(options.to ?? '+15551234567');
  const params: TwilioParams = {
    ChannelPrefix: 'whatsapp',
    ApiVersion: '2010-04-01',
    MessageStatus: options.status,
    SmsSid: options.messageSid,
    SmsStatus: options.status,
    ChannelInstallSid: 'XE' + '0'.repeat(32),
    To: to,
    From: whatsappAddress(options.from ?? fixtureWhatsappSender),
    MessageSid: options.messageSid,
    StructuredMessage: 'false',
    AccountSid: options.accountSid ?? fixtureAccountSid,
    ChannelToAddress: bareNumber(to),
  };
  if (options.errorCode !== undefined) {
    params.ErrorCode = String(options.errorCode);
    params.ErrorMessage = options.errorMessage ?? `Twilio error ${options.errorCode}`;
  }
  return { ...params, ...options.extra };
}
