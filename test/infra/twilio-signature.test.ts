// Self-test of test/support/twilio-signature.ts: signatures verify with twilio.validateRequest
// (and fail for a changed field, URL or token), and the fixtures carry Twilio's fields.
import twilio from 'twilio';
import { fixtureAccountSid, inboundWhatsappParams, signedWebhook, signTwilioRequest, statusCallbackParams } from '../support/twilio-signature.js';

const authToken = 'test-auth-token-0123456789abcdef';
const webhookUrl = 'https://assistant.example/webhooks/whatsapp?tenant=acme';

describe('Twilio signatures and webhook fixtures', () => {
  test('a signed inbound message verifies with twilio.validateRequest, and only unchanged', () => {
    const params = inboundWhatsappParams({ from: '+15551234567', body: 'Hola, ¿tienen envío?  ✓ & more', profileName: 'Ana' });
    const signature = signTwilioRequest(authToken, webhookUrl, params);
    expect(twilio.validateRequest(authToken, signature, webhookUrl, params)).toBe(true);
    expect(twilio.validateRequest(authToken, signature, webhookUrl, { ...params, Body: 'changed' })).toBe(false);
    expect(twilio.validateRequest(authToken, signature, 'https://assistant.example/webhooks/whatsapp', params)).toBe(false);
    expect(twilio.validateRequest('another-token', signature, webhookUrl, params)).toBe(false);
  });

  test('signedWebhook gives a form body that decodes back to the signed params', () => {
    const params = inboundWhatsappParams({ from: 'whatsapp:+15551234567', body: 'a+b=c & d' });
    const { headers, body } = signedWebhook(authToken, webhookUrl, params);
    const decoded = Object.fromEntries(new URLSearchParams(body));
    expect(decoded).toEqual(params);
    expect(twilio.validateRequest(authToken, headers['X-Twilio-Signature'] ?? '', webhookUrl, decoded)).toBe(true);
  });

  test('inbound WhatsApp params carry every field Twilio sends', () => {
    const params = inboundWhatsappParams({ from: '+15551234567', body: 'hi', messageSid: 'SM' + 'a'.repeat(32) });
    expect(params).toEqual({
      SmsMessageSid: 'SM' + 'a'.repeat(32),
      NumMedia: '0',
      ProfileName: 'Test Customer',
      MessageType: 'text',
      SmsSid: 'SM' + 'a'.repeat(32),
      WaId: '15551234567',
      SmsStatus: 'received',
      Body: 'hi',
      To: 'whatsapp:+14155238886',
      NumSegments: '1',
      ReferralNumMedia: '0',
      MessageSid: 'SM' + 'a'.repeat(32),
      AccountSid: fixtureAccountSid,
      From: 'whatsapp:+15551234567',
      ApiVersion: '2010-04-01',
    });
  });

  test('inbound variants: media, button, location, reply context, channel metadata', () => {
    const media = inboundWhatsappParams({ from: '+15551234567', media: [{ url: 'https://api.twilio.com/media/1', contentType: 'image/jpeg' }] });
    expect(media).toMatchObject({ NumMedia: '1', MessageType: 'image', MediaUrl0: 'https://api.twilio.com/media/1', MediaContentType0: 'image/jpeg' });
    expect(media.MessageSid).toMatch(/^MM[0-9a-f]{32}$/);
    expect(inboundWhatsappParams({ from: '+1555', button: { text: 'Talk to sales', payload: 'handoff:sales' } })).toMatchObject({
      MessageType: 'button',
      ButtonText: 'Talk to sales',
      ButtonPayload: 'handoff:sales',
    });
    expect(inboundWhatsappParams({ from: '+1555', location: { latitude: 40.4, longitude: -3.7, label: 'Office' } })).toMatchObject({
      MessageType: 'location',
      Latitude: '40.4',
      Longitude: '-3.7',
      Label: 'Office',
    });
    const reply = inboundWhatsappParams({ from: '+1555', repliedTo: { messageSid: 'SM1', sender: '+14155238886' }, channelMetadata: true });
    expect(reply.OriginalRepliedMessageSender).toBe('whatsapp:+14155238886');
    expect(JSON.parse(reply.ChannelMetadata ?? '')).toMatchObject({ type: 'whatsapp' });
  });

  test('status callbacks carry WhatsApp status fields and errors', () => {
    const delivered = statusCallbackParams({ messageSid: 'SM' + 'b'.repeat(32), status: 'delivered', to: '+15551234567' });
    expect(delivered).toMatchObject({
      MessageStatus: 'delivered',
      SmsStatus: 'delivered',
      ChannelPrefix: 'whatsapp',
      ChannelToAddress: '+15551234567',
      To: 'whatsapp:+15551234567',
      MessageSid: 'SM' + 'b'.repeat(32),
    });
    expect(delivered.ErrorCode).toBeUndefined();
    const failed = statusCallbackParams({ messageSid: 'SM1', status: 'failed', errorCode: 63016 });
    expect(failed).toMatchObject({ MessageStatus: 'failed', ErrorCode: '63016' });
    expect(twilio.validateRequest(authToken, signTwilioRequest(authToken, webhookUrl, failed), webhookUrl, failed)).toBe(true);
  });
});
