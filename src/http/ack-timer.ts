/**
 * The webhook-ack histogram: time from an inbound request (a Twilio webhook, a widget message)
 * to its response, which is what the sender waits on before it retries or shows a spinner.
 */
import type { RequestHandler } from 'express';
import type { Metrics } from '../metrics.js';

/** Middleware observing `webhook_ack_seconds{channel,status}` when the response is sent. */
export function ackTimer(metrics: Metrics, channel: string): RequestHandler {
  return (_request, response, next) => {
    const started = performance.now();
    response.once('finish', () => {
      metrics.observe('webhook_ack_seconds', { channel, status: String(response.statusCode) }, (performance.now() - started) / 1000);
    });
    next();
  };
}
