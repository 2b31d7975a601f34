/**
 * "Learned from your team ★" on the whole service (real FerretDB and Redis, the scripted
 * model): a teammate answers a handed-off question during a takeover; at hand-back the service
 * drafts a FAQ entry from the exchange in the background (one FAST-tier call, the customer's
 * name, phone, email and order number out of the prompt and the draft) and lists it; until an
 * owner approves it nothing of it reaches a turn; approved (edited), it is a FAQ entry the next
 * turn cites. A dismissed one is never used. Every model call — each step of a turn that calls
 * a tool, each draft — is metered in `/admin/usage` and the reports.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Script, ScriptedCall } from '../support/deterministic-model.js';
import { keywordJudge } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { handoffsSettled, turnsSettled } from '../support/settled.js';
import { withoutPersonalData } from '../../src/knowledge/suggestions-draft.js';

const CLEO = 'whatsapp:+34600913001';
const ADMIN_TOKEN = 'admin-token-for-suggestion-tests-0123';
const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const PERSONAL = ['Maya', 'Lindqvist', '7700', '900123', 'maya.lindqvist@example.com', 'example.com', '55821', 'INV-2026-0042'].concat(
  // Another teammate on the roster, a booking ref, a US-format number, a street address, a date of birth.
  ['Tomasz', 'QX7-PLM', '555', '123-4567', 'Oak Road', '1985'],
);

/** The reply model: hands off on "person"; otherwise says whether the brief held sources. */
const assistant: Script = (call) => {
  if (call.toolResults.length > 0) return { text: 'Done. The team will contact you here on WhatsApp.' };
  if (/person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'A question the assistant could not answer' } }] };
  }
  return { text: call.system.includes('<source n="1">') ? 'From our help center.\nSource: FAQ' : 'No sources.' };
};

const isDraft = (call: ScriptedCall) => call.system.includes('You draft one FAQ entry');

/** The judge: every turn needs knowledge; a draft call answers with the team's lines it was given (as a model would rephrase them). */
const judge: Script = (call) => {
  if (isDraft(call)) {
    const team = call.userText
      .split('\n')
      .filter((line) => line.startsWith('Team: '))
      .map((line) => line.slice('Team: '.length));
    const kayak = team.some((line) => /kayak/i.test(line));
    return {
      text: JSON.stringify({
        reusable: true,
        question: kayak ? 'Do you rent kayaks?' : 'Is there a warranty on surfboards?',
        answer: team.join(' '),
      }),
    };
  }
  const answer = keywordJudge(call);
  const json = JSON.parse((answer as { text: string }).text) as Record<string, unknown>;
  if ('knowledge' in json) json.knowledge = { needed: true, terms: '' };
  return { text: JSON.stringify(json) };
};

interface Suggestion {
  id: string;
  status: string;
  question?: string;
  answer?: string;
  exchange: string;
  faqId?: string;
}

describe('learned from your team', () => {
  let harness: Harness;
  const to = (address: string) => harness.twilio.messages.filter((message) => message.to === address);
  const bodiesTo = (address: string) => to(address).map((message) => message.body);
  const suggestions = async (status = 'pending') =>
    ((await harness.http.get(`/admin/knowledge/suggestions?status=${status}`).set(auth)).body as { suggestions: Suggestion[] }).suggestions;

  /** A customer asks for a person; Cleo answers with `answers`, the customer writes `meanwhile`, Cleo hands back. */
  const takeover = async (customer: string, answers: string[], meanwhile: string) => {
    await harness.sendWhatsapp({ from: customer, body: 'I need help from a person please', profileName: 'Maya Lindqvist' });
    await eventually(() => to(CLEO).some((message) => message.body.includes(customer.replace('whatsapp:', ''))) || undefined);
    await handoffsSettled(harness.services);
    const handoff = (await harness.services.handoffs.list({ limit: 10 })).find((candidate) => candidate.customer.address === customer)!;
    for (const answer of answers) {
      await harness.sendWhatsapp({ from: CLEO, body: `#${handoff.shortCode} ${answer}` });
      await eventually(() => bodiesTo(customer).some((body) => body.endsWith(answer)) || undefined);
    }
    await harness.sendWhatsapp({ from: customer, body: meanwhile });
    await eventually(() => to(CLEO).some((message) => message.body.startsWith(`Customer: ${meanwhile.slice(0, 20)}`)) || undefined);
    await harness.sendWhatsapp({ from: CLEO, body: '#done' });
    await eventually(() => bodiesTo(customer).some((body) => body.startsWith("You're back with our assistant.")) || undefined);
    return handoff;
  };
  /** One turn of a customer with no history; the reply call's system prompt. */
  const ask = async (customer: string, text: string) => {
    const before = harness.models.replyCalls().length;
    await harness.sendWhatsapp({ from: customer, body: text });
    await eventually(() => harness.models.replyCalls().length > before || undefined);
    await turnsSettled(harness.services);
    return harness.models.replyCalls().at(-1)!.system;
  };

  beforeAll(async () => {
    harness = await startHarness({
      script: assistant,
      env: {
        HANDOFF_TEAMS: JSON.stringify({
          support: {
            label: 'Support team',
            members: [
              { name: 'Cleo', whatsapp: CLEO },
              { name: 'Tomasz', whatsapp: 'whatsapp:+447700900999' },
            ],
          },
        }),
        ADMIN_TOKEN,
        NOTICE_BACKOFF_MS: '20',
      },
    });
    harness.models.setJudge(judge);
  });
  afterAll(async () => {
    await harness?.close();
  });

  test('a teammate’s answer becomes a suggestion without personal data, unused until approved, then a FAQ entry the next turn cites', async () => {
    const customer = 'whatsapp:+447700900123';
    const handoff = await takeover(
      customer,
      [
        'Hi Maya, I found your order 55821 and invoice INV-2026-0042; Tomasz checked booking ref QX7-PLM.',
        'Every surfboard we sell has a 2-year warranty against cracks and delamination; bring it to any shop with the receipt.',
      ],
      'Thanks! Reach me at maya.lindqvist@example.com or +44 7700 900123, or (555) 123-4567; I live at 12 Oak Road, born 12 March 1985',
    );

    const [suggestion] = await eventually(async () => {
      const listed = await suggestions();
      return listed.length > 0 ? listed : undefined;
    });
    expect(suggestion).toMatchObject({ status: 'pending', question: 'Is there a warranty on surfboards?' });
    expect(suggestion!.answer).toContain('2-year warranty against cracks and delamination');
    expect(suggestion!.exchange).toContain('Team: Every surfboard we sell has a 2-year warranty');
    expect(suggestion!.exchange).toContain(`Why it was handed to the team: ${handoff.reason}`);
    // Nothing personal in the suggestion, nor in what the model was given.
    const drafts = harness.models.calls.filter(isDraft);
    expect(drafts).toHaveLength(1);
    expect(drafts[0]!.tier).toBe('fast');
    for (const text of [JSON.stringify(suggestion), drafts[0]!.promptText]) for (const personal of PERSONAL) expect(text).not.toContain(personal);
    expect(suggestion!.exchange).toContain('[email]');
    expect(suggestion!.exchange).toContain('[phone]');
    expect(suggestion!.exchange).toMatch(/order \[number\] and invoice \[number\]/);

    // Not approved yet: a turn about it gets no source from it.
    const other = 'whatsapp:+447700900200';
    expect(await ask(other, 'Is there a warranty on surfboards?')).not.toContain('delamination');

    const approved = await harness.http
      .post(`/admin/knowledge/suggestions/${suggestion!.id}/approve`)
      .set(auth)
      .send({ answer: 'Every surfboard has a 2-year warranty against cracks and delamination; bring it to any shop with the receipt.' });
    expect(approved.status).toBe(201);
    const faqId = (approved.body as { faqId: string }).faqId;
    expect(faqId).toMatch(/^faq_[0-9a-f]{16}$/);
    expect((await harness.http.post(`/admin/knowledge/suggestions/${suggestion!.id}/approve`).set(auth)).status).toBe(409);
    expect(await suggestions()).toEqual([]);
    expect(await suggestions('approved')).toMatchObject([{ id: suggestion!.id, status: 'approved', faqId }]);
    const overview = (await harness.http.get('/admin/knowledge').set(auth)).body as { documents: { id: string; kind: string; title: string }[] };
    expect(overview.documents).toContainEqual(expect.objectContaining({ id: faqId, kind: 'faq', title: 'Is there a warranty on surfboards?' }));

    // The next turn cites it.
    const system = await ask(other, 'Is there a warranty on my surfboard?');
    expect(system).toContain('<source n="1">');
    expect(system).toContain('Every surfboard has a 2-year warranty against cracks and delamination');
    expect(bodiesTo(other).at(-1)).toContain('From our help center.');
  }, 120_000);

  test('a dismissed suggestion is never used', async () => {
    await takeover('whatsapp:+447700900300', ['Yes, we rent sea kayaks for 40 euros a day from the harbour shop.'], 'Great, thank you!');
    const suggestion = await eventually(async () => (await suggestions()).find((candidate) => candidate.question === 'Do you rent kayaks?'));
    expect((await harness.http.delete(`/admin/knowledge/suggestions/${suggestion.id}`).set(auth)).status).toBe(204);
    expect((await harness.http.delete(`/admin/knowledge/suggestions/${suggestion.id}`).set(auth)).status).toBe(409);
    expect((await harness.http.post(`/admin/knowledge/suggestions/${suggestion.id}/approve`).set(auth)).status).toBe(409);
    expect(await suggestions('dismissed')).toMatchObject([{ id: suggestion.id, status: 'dismissed' }]);
    expect(await ask('whatsapp:+447700900400', 'Do you rent sea kayaks?')).not.toContain('kayak');
    const overview = (await harness.http.get('/admin/knowledge').set(auth)).body as { documents: { title: string }[] };
    expect(overview.documents.map((document) => document.title)).not.toContain('Do you rent kayaks?');
  }, 120_000);

  test('every model call is metered: a tool call and its follow-up are two, each draft one (/admin/usage and the reports)', async () => {
    await turnsSettled(harness.services);
    const made = harness.models.calls.length;
    const drafts = harness.models.calls.filter(isDraft).length;
    expect(drafts).toBe(2);
    const today = new Date().toISOString().slice(0, 10);
    const usage = (await harness.http.get(`/admin/usage?from=${today}&to=${today}`).set(auth)).body as {
      rows: { roleId: string; calls: number }[];
      total: { calls: number };
    };
    expect(usage.total.calls).toBe(made);
    expect(usage.rows.filter((row) => row.roleId === 'faq-suggestion').reduce((sum, row) => sum + row.calls, 0)).toBe(drafts);
    const report = await harness.http.get(`/admin/reports/summary?from=${today}&to=${today}`).set(auth);
    expect(report.body.totals.model.calls).toBe(made);
  });

  test('bad requests: an unknown or malformed id, unknown edits, a bad status, no token', async () => {
    expect((await harness.http.post('/admin/knowledge/suggestions/sug_0123456789abcdef/approve').set(auth)).status).toBe(404);
    expect((await harness.http.delete('/admin/knowledge/suggestions/nope').set(auth)).status).toBe(400);
    const edits = await harness.http.post('/admin/knowledge/suggestions/sug_0123456789abcdef/approve').set(auth).send({ colour: 'red' });
    expect(edits.status).toBe(400);
    expect((await harness.http.get('/admin/knowledge/suggestions?status=maybe').set(auth)).status).toBe(400);
    expect((await harness.http.get('/admin/knowledge/suggestions')).status).toBe(401);
  });
});

describe('personal data out of a draft', () => {
  test('names, emails, phone numbers, order and invoice numbers go; facts about the business stay', () => {
    const personal = ['María de la Cruz', 'whatsapp:+34600111222', 'Cleo'];
    expect(withoutPersonalData('Hola María, soy Cleo: tu pedido nº 4471 sale hoy; escríbenos a maria.cruz@correo.es o al 600 111 222.', personal)).toBe(
      'Hola [name], soy [name]: tu pedido nº [number] sale hoy; escríbenos a [email] o al [phone].',
    );
    expect(withoutPersonalData('Rechnung RE-2024-118 und Bestellung #88231: Rückgabe in 30 Tagen, ab 2026-01-15, Hotline +49 (0)30 1234567.', [])).toBe(
      'Rechnung [number] und Bestellung #[number]: Rückgabe in 30 Tagen, ab [date], Hotline [phone].',
    );
    expect(withoutPersonalData('Delivery takes 4 to 6 business days and costs 40 euros; de la mer.', personal)).toBe(
      'Delivery takes 4 to 6 business days and costs 40 euros; de la mer.',
    );
  });
});
