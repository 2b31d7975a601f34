/**
 * What the real OpenAI provider sends for a customer's photo and PDF (Chat Completions against
 * the OpenAI-compatible stub): the reply request carries the image as an `image_url` data URL
 * and the PDF as a `file` part; the judge's request carries only text ("(1 photo, 1 PDF)" and
 * the caption), never the bytes.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { startOpenAIStub, type ChatCompletionContentPart, type OpenAIStub } from '../support/openai-stub.js';
import { stubAssistant } from '../support/stub-assistant.js';

let harness: Harness;
let stub: OpenAIStub;
beforeAll(async () => {
  stub = await startOpenAIStub();
  stub.respondWith(stubAssistant);
  harness = await startHarness({ useConfiguredModel: true, env: { OPENAI_BASE_URL: stub.baseUrl } });
});
afterAll(async () => {
  await harness.close();
  await stub.close();
});

test('a photo and a PDF reach the model request as image and file parts; the judge request holds only text', async () => {
  const customer = 'whatsapp:+447700901401';
  const media = [
    { url: harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' }), contentType: 'image/png' },
    { url: harness.twilio.addMedia({ body: PDF_BYTES, contentType: 'application/pdf' }), contentType: 'application/pdf' },
  ];
  await harness.sendWhatsapp({ from: customer, body: 'is this invoice right?', media });
  await eventually(() => harness.twilio.messages.find((message) => message.to === customer));

  const reply = stub.requests.find((request) => request.body.response_format === undefined);
  const latest = reply?.body.messages.filter((message) => message.role === 'user').at(-1);
  const parts = (Array.isArray(latest?.content) ? latest.content : []) as ChatCompletionContentPart[];
  expect(parts.map((part) => part.type)).toEqual(['text', 'image_url', 'file']);
  expect(parts[0]?.text).toBe('(1 photo, 1 PDF) is this invoice right?');
  expect(parts[1]).toMatchObject({ image_url: { url: `data:image/png;base64,${PNG_BYTES.toString('base64')}` } });
  expect(parts[2]).toMatchObject({ file: { file_data: `data:application/pdf;base64,${PDF_BYTES.toString('base64')}` } });

  const judge = stub.requests.find((request) => request.body.response_format !== undefined);
  const judgeText = JSON.stringify(judge?.body.messages);
  expect(judgeText).toContain('(1 photo, 1 PDF) is this invoice right?');
  expect(judgeText).not.toContain(PNG_BYTES.toString('base64'));
  expect(judgeText).not.toContain('image_url');
});
