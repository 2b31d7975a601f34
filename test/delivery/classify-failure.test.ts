/**
 * The retry policy's classification: outages ride out the budget, refusals for good fail at
 * once, anything unknown gets a few attempts. A library's errors are recognised by name and
 * fields; causes are followed.
 */
import { describe, expect, test } from '@jest/globals';
import { ChannelSendError, ModelCallError, StorageWriteError, classifyFailure } from '../../src/errors/index.js';

const named = (name: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(`${name} happened`), { name, ...fields });

describe('classifyFailure', () => {
  test.each([
    ['Twilio 503 / 429', new ChannelSendError('Twilio refused the message', true, 20503)],
    ['a retryable model error', new ModelCallError('overloaded', true)],
    ['MongoDB unreachable', named('MongoServerSelectionError', { cause: named('MongoNetworkError') })],
    ['a dropped MongoDB connection', named('MongoNetworkError')],
    ['mongoose buffering while disconnected', new Error('Operation `messages.insertOne()` buffering timed out after 10000ms')],
    ['a write MongoDB says to retry', named('MongoServerError', { errorLabels: ['RetryableWriteError'] })],
    ['a write the store did not keep', new StorageWriteError('the reply to SM1 was not stored')],
    ['Redis gone', named('MaxRetriesPerRequestError')],
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' })],
    ['an outage wrapped as the cause', new Error('turn failed', { cause: named('MongoNetworkError') })],
  ])('%s is infrastructure', (_name, error) => {
    expect(classifyFailure(error)).toBe('infrastructure');
  });

  test.each([
    ['Twilio 400 (63016, outside the window)', new ChannelSendError('Twilio refused the message', false, 63016)],
    ['a retryable model error wrapped as the cause of a refusal', new ChannelSendError('refused', false, 400, { cause: new ModelCallError('x', true) })],
    ['input the schema rejects', named('ZodError')],
  ])('%s is deterministic', (_name, error) => {
    expect(classifyFailure(error)).toBe('deterministic');
  });

  test.each([
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'text')")],
    ['a thrown string', 'boom'],
  ])('%s is unknown', (_name, error) => {
    expect(classifyFailure(error)).toBe('unknown');
  });
});
