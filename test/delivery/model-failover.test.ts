/**
 * Issue 25, end to end on real Redis and FerretDB with the real provider packages over HTTP: an
 * Anthropic-Messages-shaped server is each tier's primary (`anthropic:…`) and the
 * OpenAI-compatible stub, as a named compatible server (`local:…`), its fallback. A primary
 * failing (500, 429, a hang, malformed output) costs the customer nothing: the fallback answers,
 * no holding message, no apology; its breaker, once open, keeps calls off it until its probe;
 * both down, then back: each conversation gets at most one holding message, then its real
 * answer, nobody asked to resend; a photo for a reply model that can't see is described by the
 * vision model; metering names the model that answered.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { HOLDING_NOTICE_TEXT } from '../../src/turn/holding-notice.js';
import { schemaDefault, type JsonSchema } from '../support/deterministic-model.js';
import { startAnthropicStub, type AnthropicRequestBody, type AnthropicStub, type AnthropicStubReply } from '../support/anthropic-stub.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PNG_BYTES } from '../support/media-fixtures.js';
import { startOpenAIStub, type ChatCompletionContentPart, type ChatCompletionRequestBody, type OpenAIStub, type StubReply } from '../support/openai-stub.js';
import { stubAssistant } from '../support/stub-assistant.js';
import { turnsSettled } from '../support/settled.js';

const PRIMARY_ANSWER = 'Answered by the primary.';
const BACKUP_ANSWER = 'Answered by the backup.';
const COOLDOWN_MS = 3_000;

/** The compatible stub as a healthy model: judge calls by keyword, replies with BACKUP_ANSWER. */
const backup = (body: ChatCompletionRequestBody): StubReply => (body.response_format ? stubAssistant(body) : { text: BACKUP_ANSWER });

/** The Anthropic stub as a healthy model: structured calls get a schema-valid default, replies PRIMARY_ANSWER. */
function primary(body: AnthropicRequestBody): AnthropicStubReply {
  const schema = body.output_config?.format?.schema ?? body.tools?.find((tool) => tool.name === 'json')?.input_schema;
  return schema ? { json: schemaDefault(schema as JsonSchema) } : { text: PRIMARY_ANSWER };
}

const isStructured = (body: AnthropicRequestBody) => body.output_config?.format !== undefined || (body.tools ?? []).some((tool) => tool.name === 'json');

interface Rig {
  harness: Harness;
  anthropic: AnthropicStub;
  compatible: OpenAIStub;
}

async function startRig(env: Record<string, string> = {}): Promise<Rig> {
  const anthropic = await startAnthropicStub();
  const compatible = await startOpenAIStub();
  anthropic.respondWith(primary);
  compatible.respondWith(backup);
  const harness = await startHarness({
    useConfiguredModel: true,
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-test-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
      OPENAI_COMPATIBLE_LOCAL_BASE_URL: compatible.baseUrl,
      OPENAI_COMPATIBLE_LOCAL_API_KEY: 'sk-local-test-key',
      MODEL_FAST: 'anthropic:claude-primary,local:backup-fast',
      MODEL_SMART: 'anthropic:claude-primary,local:backup-smart',
      MODEL_TIMEOUT_MS: '1500',
      MODEL_BREAKER_FAILURES: '3',
      MODEL_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS),
      MODEL_HOLDING_NOTICE_MS: '2000',
      MESSAGE_RETRY_BACKOFF_MS: '400',
      ...env,
    },
  });
  return { harness, anthropic, compatible };
}

async function stopRig(rig: Rig | undefined): Promise<void> {
  await rig?.harness.close();
  await rig?.anthropic.close();
  await rig?.compatible.close();
}

const bodiesTo = (harness: Harness, customer: string) => harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);

describe('the primary down', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(() => stopRig(rig));

  test('every customer is answered by the fallback — 500s, 429s, hangs, malformed output — with no holding message and no apology; metering names the fallback', async () => {
    const failures: AnthropicStubReply[] = [{ status: 500 }, { status: 429 }, { hang: true }, { raw: '{"id": "msg_1", "content": [' }];
    let calls = 0;
    rig.anthropic.respondWith(() => failures[calls++ % failures.length] ?? { status: 500 });
    const customers = ['whatsapp:+447700902001', 'whatsapp:+447700902002', 'whatsapp:+447700902003', 'whatsapp:+447700902004'];
    await Promise.all(customers.map((from) => rig.harness.sendWhatsapp({ from, body: 'hello, are you open today?' })));
    await rig.harness.twilio.waitForMessages(customers.length, 30_000);
    await turnsSettled(rig.harness.services);
    for (const customer of customers) expect(bodiesTo(rig.harness, customer)).toEqual([BACKUP_ANSWER]);
    const sent = rig.harness.twilio.messages.map((message) => message.body);
    expect(sent).not.toContain(HOLDING_NOTICE_TEXT);
    expect(sent).not.toContain(APOLOGY_TEXT);
    expect(rig.anthropic.requests.length).toBeGreaterThan(0);
    // Metering: the calls that answered were the fallback's, none the failing primary's.
    const { metrics } = rig.harness.services;
    expect(metrics.value('model_tokens_total', { tier: 'fast', model: 'local:backup-fast', kind: 'output' })).toBeGreaterThan(0);
    expect(metrics.value('model_tokens_total', { tier: 'fast', model: 'anthropic:claude-primary', kind: 'output' })).toBe(0);
    const answered = rig.harness.logs.filter((line) => line.event === 'turn-answered');
    expect(answered.map((line) => line.model)).toEqual(customers.map(() => 'local:backup-fast'));
  }, 60_000);
});

describe('the breaker', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(() => stopRig(rig));

  test('open after three failures, it keeps every call off the primary until one probe, which closes it', async () => {
    rig.anthropic.respondWith({ status: 500 });
    const ask = async (from: string) => {
      const before = rig.harness.twilio.messages.length;
      await rig.harness.sendWhatsapp({ from, body: 'what time do you close?' });
      await rig.harness.twilio.waitForMessages(before + 1, 15_000);
      return bodiesTo(rig.harness, from).at(-1);
    };
    // Judge and reply fail on the primary (1, 2), the next judge (3) opens it; the fallback answers throughout.
    expect(await ask('whatsapp:+447700902101')).toBe(BACKUP_ANSWER);
    expect(await ask('whatsapp:+447700902102')).toBe(BACKUP_ANSWER);
    expect(rig.anthropic.requests).toHaveLength(3);
    const opened = Date.now();
    // Open: two more turns, no call reaches the primary.
    expect(await ask('whatsapp:+447700902103')).toBe(BACKUP_ANSWER);
    expect(await ask('whatsapp:+447700902104')).toBe(BACKUP_ANSWER);
    expect(rig.anthropic.requests).toHaveLength(3);
    // The primary recovers; past the cooldown, the next turn's first call probes it and closes the breaker.
    rig.anthropic.respondWith(primary);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, opened + COOLDOWN_MS + 200 - Date.now())));
    expect(await ask('whatsapp:+447700902105')).toBe(PRIMARY_ANSWER);
    expect(rig.anthropic.requests).toHaveLength(5);
    expect(isStructured(rig.anthropic.requests[3]?.body ?? { model: '', messages: [], max_tokens: 0 })).toBe(true);
  }, 60_000);
});

describe('every provider down for a while, then back', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(() => stopRig(rig));

  test('each conversation gets one holding message, then its real answer: nobody is asked to resend, nothing is sent twice', async () => {
    rig.anthropic.respondWith({ status: 503 });
    rig.compatible.respondWith({ status: 500 });
    const customers = ['whatsapp:+447700902201', 'whatsapp:+447700902202', 'whatsapp:+447700902203'];
    await Promise.all(customers.map((from) => rig.harness.sendWhatsapp({ from, body: 'is my order on its way?' })));
    // At MODEL_HOLDING_NOTICE_MS (or the first failure past it), each gets the holding message…
    await eventually(() => customers.every((customer) => bodiesTo(rig.harness, customer).includes(HOLDING_NOTICE_TEXT)) || undefined, 30_000);
    // …and the outage goes on for a few more retries, none of which sends it again.
    const retries = rig.harness.logs.filter((line) => line.event === 'inbound-retrying').length;
    await eventually(() => rig.harness.logs.filter((line) => line.event === 'inbound-retrying').length >= retries + customers.length || undefined, 30_000);
    for (const customer of customers) expect(bodiesTo(rig.harness, customer)).toEqual([HOLDING_NOTICE_TEXT]);
    rig.anthropic.respondWith(primary);
    rig.compatible.respondWith(backup);
    await eventually(() => customers.every((customer) => bodiesTo(rig.harness, customer).length === 2) || undefined, 45_000);
    await turnsSettled(rig.harness.services);
    for (const customer of customers) {
      const bodies = bodiesTo(rig.harness, customer);
      expect(bodies).toHaveLength(2);
      expect(bodies[0]).toBe(HOLDING_NOTICE_TEXT);
      expect([PRIMARY_ANSWER, BACKUP_ANSWER]).toContain(bodies[1]);
    }
    expect(rig.harness.twilio.messages.map((message) => message.body)).not.toContain(APOLOGY_TEXT);
    expect(rig.harness.logs.filter((line) => line.event === 'inbound-failed')).toEqual([]);
    // The log: one warn line when each provider went out, one when the one answering came back;
    // every failed attempt, retry and skipped judgment at debug; nothing at error.
    const loud = rig.harness.logs.filter((line) => line.level === 'warn' || line.level === 'error');
    const about = (event: string) => loud.filter((line) => line.event === event).map((line) => `${line.level} ${String(line.provider)}`);
    expect(about('model-outage')).toEqual(['warn anthropic', 'warn local']);
    const recovered = about('model-recovered');
    expect(recovered.length).toBeGreaterThan(0);
    expect(new Set(recovered).size).toBe(recovered.length);
    expect(loud.filter((line) => line.event === 'holding-notice-sent')).toHaveLength(customers.length);
    expect(loud.filter((line) => !['model-outage', 'model-recovered', 'holding-notice-sent', 'redis-aof-off'].includes(line.event))).toEqual([]);
  }, 120_000);
});

describe('a photo for a reply model that cannot see', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({
      MODEL_FAST: 'local:text-only',
      MODEL_SMART: 'local:text-only',
      MODEL_VISION: 'anthropic:claude-eyes',
    });
  });
  afterAll(() => stopRig(rig));

  test('is described by one MODEL_VISION call, and the description reaches the reply model as labelled text', async () => {
    rig.anthropic.respondWith({ text: 'A photo of a red invoice, number 1042, total 42 EUR.' });
    const customer = 'whatsapp:+447700902301';
    const media = [{ url: rig.harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' }), contentType: 'image/png' }];
    await rig.harness.sendWhatsapp({ from: customer, body: 'is this right?', media });
    await eventually(() => bodiesTo(rig.harness, customer)[0], 20_000);
    expect(bodiesTo(rig.harness, customer)).toEqual([BACKUP_ANSWER]);

    expect(rig.anthropic.requests).toHaveLength(1);
    const seen = rig.anthropic.requests[0]?.body;
    expect(seen?.model).toBe('claude-eyes');
    const blocks = seen?.messages.flatMap((message) => (Array.isArray(message.content) ? message.content : []));
    expect(blocks?.map((block) => block.type)).toContain('image');

    const reply = rig.compatible.requests.find((request) => request.body.response_format === undefined);
    const latest = reply?.body.messages.filter((message) => message.role === 'user').at(-1);
    const parts = (Array.isArray(latest?.content) ? latest.content : [{ type: 'text', text: latest?.content ?? '' }]) as ChatCompletionContentPart[];
    expect(parts.map((part) => part.type)).toEqual(['text', 'text']);
    expect(parts[1]?.text).toContain('A photo of a red invoice, number 1042, total 42 EUR.');
    expect(JSON.stringify(reply?.body)).not.toContain(PNG_BYTES.toString('base64'));
    const { metrics } = rig.harness.services;
    expect(metrics.value('model_tokens_total', { tier: 'vision', model: 'anthropic:claude-eyes', kind: 'output' })).toBeGreaterThan(0);
  }, 60_000);
});
