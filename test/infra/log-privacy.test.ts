/**
 * The service's logs hold no person: a real conversation (a WhatsApp turn with a profile name, an
 * e-mail and words of its own; the contact saved, read by URL, refused without a token and
 * removed through the admin API; a hand-off, a teammate's takeover and its end) leaves lines that carry none of the planted strings, and an
 * opaque id instead, the same on every line of that person, which `npm run log-id` computes.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLogger, type LogFields, type Logger } from '../../src/logger.js';
import { logIdOf, protectPeople } from '../../src/logger-privacy.js';
import { RUN_TS } from '../support/run-ts.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { handoffsSettled, turnsSettled } from '../support/settled.js';

const ADMIN_TOKEN = 'admin-token-for-log-privacy-0123456';
const CLEO = 'whatsapp:+34600913077';
const NUMBER = '+447700900417';
const CUSTOMER = `whatsapp:${NUMBER}`;
const EMAIL = 'ingrid.vasquez@example.org';
const NAME = 'Ingrid Vasquez-Holm';
const WORDS = 'turquoise walrus umbrella';
const MESSAGE = `Hello, I am ${NAME}, write to ${EMAIL}; my phrase is ${WORDS}`;
/** Every spelling of the person the service could log: the number with and without its prefix, URL-encoded, the e-mail, the name, the words. */
const PLANTED = [NUMBER, NUMBER.slice(1), encodeURIComponent(NUMBER), EMAIL, encodeURIComponent(EMAIL), 'Ingrid', 'Vasquez', 'turquoise walrus', WORDS];

describe("a person's trace in the logs", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({
      env: { ADMIN_TOKEN, HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support team', members: [{ name: 'Cleo', whatsapp: CLEO }] } }) },
      // Hands off on "person"; otherwise echoes the customer.
      script: (call) => {
        if (call.toolResults.length > 0) return { text: 'Done. The team will contact you here on WhatsApp.' };
        if (/person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
          return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'The customer asked for a person' } }] };
        }
        return { text: `You said: ${call.userText}` };
      },
    });
  });
  afterAll(() => harness.close());

  test('a conversation and its contact leave no number, e-mail, name or message text, and one opaque id to follow', async () => {
    await harness.sendWhatsapp({ from: CUSTOMER, body: MESSAGE, profileName: NAME });
    await harness.twilio.waitForMessages(1);
    await turnsSettled(harness.services);
    const admin = (method: 'get' | 'put' | 'delete', path: string) => harness.http[method](path).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    const contact = `/admin/contacts/${encodeURIComponent(CUSTOMER)}`;
    expect((await admin('put', contact).send({ name: NAME, email: EMAIL })).status).toBe(201);
    expect((await admin('get', contact)).status).toBe(200);
    expect((await harness.http.get(contact)).status).toBe(401);
    expect((await admin('delete', contact)).status).toBe(204);
    await eventually(() => harness.logs.some((line) => line.event === 'admin-contact-removed') || undefined);

    const text = harness.logs.map((line) => JSON.stringify(line)).join('\n');
    const hits = PLANTED.filter((planted) => text.includes(planted));
    expect(hits).toEqual([]);
    // The person is followed by one id: the turn's lines and the admin API's carry the same one.
    const id = harness.logId(CUSTOMER);
    expect(id).toBe(harness.logId(NUMBER));
    expect(id).toMatch(/^~[0-9a-f]{16}$/);
    const theirs = harness.logs.filter((line) => JSON.stringify(line).includes(id)).map((line) => line.event);
    expect(theirs).toEqual(expect.arrayContaining(['turn-answered', 'admin-contact-saved', 'admin-contact-removed']));
    // The reply went out all the same, with the customer's own words.
    expect(harness.twilio.messages.at(-1)?.body).toContain(WORDS);
  });

  test('a hand-off and a takeover leave no trace of the customer or the teammate either', async () => {
    const customer = 'whatsapp:+447700900418';
    const bodiesTo = (address: string) => harness.twilio.messages.filter((message) => message.to === address).map((message) => message.body);
    await harness.sendWhatsapp({ from: customer, body: 'I need a person: order 77120, write to sigrun.a@example.net', profileName: 'Sigrun Aaltonen' });
    await eventually(() => bodiesTo(CLEO).some((body) => body.includes(customer.replace('whatsapp:', ''))) || undefined);
    await handoffsSettled(harness.services);
    const handoff = (await harness.services.handoffs.list({ limit: 10 })).find((candidate) => candidate.customer.address === customer)!;
    await harness.sendWhatsapp({ from: CLEO, body: `#${handoff.shortCode} Hello Sigrun, the parcel left the harbour today` });
    await eventually(() => bodiesTo(customer).some((body) => body.endsWith('the parcel left the harbour today')) || undefined);
    await harness.sendWhatsapp({ from: customer, body: 'Great, marmalade penguin' });
    await eventually(() => bodiesTo(CLEO).some((body) => body.includes('marmalade penguin')) || undefined);
    await harness.sendWhatsapp({ from: CLEO, body: '#done' });
    await eventually(() => bodiesTo(customer).some((body) => body.startsWith("You're back with our assistant.")) || undefined);
    await turnsSettled(harness.services);

    const text = harness.logs.map((line) => JSON.stringify(line)).join('\n');
    const planted = [
      '+447700900418',
      '447700900418',
      'sigrun.a@example.net',
      'Sigrun',
      'Aaltonen',
      'marmalade penguin',
      'parcel left the harbour',
      CLEO.slice('whatsapp:'.length),
    ];
    expect(planted.filter((value) => text.includes(value))).toEqual([]);
    const theirs = harness.logs.filter((line) => JSON.stringify(line).includes(harness.logId(customer))).map((line) => line.event);
    expect(theirs).toEqual(expect.arrayContaining(['turn-answered', 'takeover-customer-relayed']));
  });

  test('npm run log-id prints the id the logs carry, from the conversation key, the number or the e-mail', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...RUN_TS, 'scripts/log-id.ts', CUSTOMER, NUMBER, EMAIL], {
      env: { ...process.env, ...harness.env },
    });
    expect(stdout.trim().split('\n')).toEqual([
      `${harness.logId(CUSTOMER)}\t${CUSTOMER}`,
      `${harness.logId(CUSTOMER)}\t${NUMBER}`,
      `${harness.logId(EMAIL)}\t${EMAIL}`,
    ]);
  });
});

describe('the opaque id', () => {
  test('is keyed: another secret gives another id, and no plain hash of the number is it', async () => {
    const { createHash } = await import('node:crypto');
    const one = logIdOf(CUSTOMER, 'a'.repeat(32));
    expect(logIdOf(CUSTOMER, 'b'.repeat(32))).not.toBe(one);
    for (const spelling of [CUSTOMER, NUMBER]) expect(one).not.toContain(createHash('sha256').update(spelling).digest('hex').slice(0, 16));
  });

  test('text fields are dropped and identifiers replaced at any depth, in errors, child fields and web conversation keys', () => {
    const lines: string[] = [];
    const secret = 's'.repeat(32);
    const logger = protectPeople(createLogger({ level: 'debug', sink: (line) => lines.push(line) }), secret);
    const web = 'web:site-1:visitor-9:chat-3';
    logger.child({ conversationKey: web }).warn('relay-failed', {
      body: MESSAGE,
      messages: [{ from: 'customer', text: WORDS }],
      to: NUMBER,
      error: new Error(`send to ${CUSTOMER} failed`, { cause: new Error(`contact ${EMAIL} unknown`) }),
      path: `/admin/contacts/${encodeURIComponent(CUSTOMER)}`,
    });
    const [line] = lines;
    for (const planted of [...PLANTED, web, 'visitor-9']) expect(line).not.toContain(planted);
    expect(JSON.parse(line!)).toMatchObject({
      conversationKey: logIdOf(web, secret),
      body: `[${MESSAGE.length} chars]`,
      messages: [{ from: 'customer', text: `[${WORDS.length} chars]` }],
      to: logIdOf(CUSTOMER, secret),
      error: { message: `send to ${logIdOf(CUSTOMER, secret)} failed`, cause: { message: `contact ${logIdOf(EMAIL, secret)} unknown` } },
      path: `/admin/contacts/${logIdOf(CUSTOMER, secret)}`,
    });
  });

  test("a child's fields are cleaned and bound only when it first writes a line at the level, as they were when it was made", () => {
    const made: LogFields[] = [];
    const lines: string[] = [];
    const counting = (logger: Logger): Logger => ({ ...logger, child: (fields) => (made.push(fields), counting(logger.child(fields))) });
    const secret = 's'.repeat(32);
    const logger = protectPeople(counting(createLogger({ level: 'warn', sink: (line) => lines.push(line) })), secret);
    // A turn's children that write nothing above the level cost no cleaning and no inner child.
    for (let turn = 0; turn < 3; turn += 1) logger.child({ conversationKey: CUSTOMER }).child({ step: turn }).info('turn-step', { to: NUMBER });
    expect(made).toEqual([]);
    expect(lines).toEqual([]);
    const fields: Record<string, unknown> = { conversationKey: CUSTOMER };
    const child = logger.child(fields);
    fields.conversationKey = 'changed later';
    child.child({ step: 'send' }).warn('send-failed', { to: NUMBER });
    expect(made).toEqual([{ conversationKey: logIdOf(CUSTOMER, secret) }, { step: 'send' }]);
    expect(JSON.parse(lines[0]!)).toMatchObject({ conversationKey: logIdOf(CUSTOMER, secret), step: 'send', to: logIdOf(CUSTOMER, secret) });
  });
});
