/**
 * Hand-offs as the people at both ends see them: the customer is told what happens next, and
 * each team's destinations (WhatsApp via Twilio, a Slack-compatible webhook) get the notice
 * once — with retries, a visible failed state, no repeat for a second request, and no
 * duplicate when a worker dies mid-delivery.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, jest, test } from '@jest/globals';
import { keywordJudge, type Script, type ScriptedCall } from '../support/deterministic-model.js';
import { eventually, startHarness, TEST_SENDER, type Harness } from '../support/harness.js';
import { handoffsSettled, transcriptsWritten } from '../support/settled.js';
import { openSse } from '../support/sse.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { RUN_TS } from '../support/run-ts.js';

// A worker process starting under load (compiling the service from source) may take most of a minute.
jest.setTimeout(120_000);

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

const SALES_PHONE = 'whatsapp:+34600000101';
const SUPPORT_PHONE = 'whatsapp:+34600000202';
const SHOP = 'https://shop.example.test';

function toolOutput(call: ScriptedCall): Record<string, unknown> | undefined {
  const last = call.toolResults.at(-1)?.output as { type?: string; value?: unknown } | undefined;
  if (!last) return undefined;
  const text = typeof last.value === 'string' ? last.value : JSON.stringify(last.value);
  const json = text.replace(/^<tool-output>\n?|\n?<\/tool-output>$/g, '');
  try {
    return JSON.parse(json) as Record<string, unknown>;
  } catch {
    return { error: json };
  }
}

/** The model, played by a script: hands off when asked, asks for a contact when the tool says so. */
const assistant: Script = (call) => {
  const output = toolOutput(call);
  if (output?.error) return { text: 'Could you share an email address or a phone number so the team can reach you?' };
  if (typeof output?.nextSteps === 'string') return { text: `Done. ${output.nextSteps}` };
  const email = call.userText.match(/[\w.+-]+@[\w-]+\.[\w.]+/)?.[0];
  if (/demo/i.test(call.userText) && call.toolNames.includes('book_sales_call')) {
    return { toolCalls: [{ name: 'book_sales_call', input: { reason: 'Demo of the Pro plan for a team of 12', ...(email ? { email } : {}) } }] };
  }
  if (/person|human|email is/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Cannot log in after resetting the password', ...(email ? { email } : {}) } }] };
  }
  return { text: `Happy to help: ${call.userText}` };
};

/** The judge learns the sales facts a customer states. */
const judge: Script = (call) => {
  const reply = keywordJudge(call);
  if (!('text' in reply) || !/team of 12/.test(call.userText)) return reply;
  const json = JSON.parse(reply.text) as { facts: Record<string, unknown> };
  json.facts['role.sales.interested_plan'] = 'Pro';
  json.facts['role.sales.team_size'] = 12;
  json.facts['role.sales.wants_demo'] = true;
  return { text: JSON.stringify(json) };
};

let receiver: Receiver;
let harness: Harness;
let server: Server;
let base: string;

const teams = () =>
  JSON.stringify({
    sales: {
      label: 'Sales team',
      whatsapp: [SALES_PHONE],
      webhooks: [receiver.url('/sales')],
      bookingUrl: 'https://book.example.test/sales',
      responseTime: 'within one business day',
    },
    support: { label: 'Support team', whatsapp: [SUPPORT_PHONE], webhooks: [receiver.url('/support')], responseTime: 'within two hours' },
  });

const handoffEnv = () => ({
  HANDOFF_TEAMS: teams(),
  BUSINESS_NAME: 'Harbour Lane',
  NOTICE_ATTEMPTS: '3',
  NOTICE_BACKOFF_MS: '20',
  ADMIN_TOKEN: 'admin-token-for-tests-0123456789',
  WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [SHOP] }]),
});

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  harness = await startHarness({ script: assistant, env: handoffEnv() });
  harness.models.setJudge(judge);
  server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.close();
  await harness.close();
  await receiver.close();
});
beforeEach(() => {
  harness.twilio.reset();
  receiver.received.splice(0);
  receiver.answerWith(() => 200);
});

const notices = (to: string) => harness.twilio.messages.filter((message) => message.to === to);
/** The webhook's text is the WhatsApp text as Slack mrkdwn: `&`, `<`, `>` escaped (the transcript link has an `&`). */
/** The WhatsApp notice's "Answer here" line (reply-to, short code) has no place on a webhook. */
const withoutAnswerLine = (text: string) =>
  text
    .split('\n')
    .filter((line) => !line.startsWith('Answer here: '))
    .join('\n');
const slackEscaped = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

describe('sales hand-off on WhatsApp', () => {
  const customer = 'whatsapp:+447700902001';

  test('the customer hears what happens next; the sales team gets the notice once on each destination', async () => {
    await harness.sendWhatsapp({ from: customer, body: 'Hi, we are a team of 12 and would like a demo of the Pro plan', profileName: 'Ana Pérez' });
    await eventually(() => (notices(customer).length === 1 && notices(SALES_PHONE).length === 1 && receiver.received.length === 1) || undefined);

    expect(notices(customer)[0]?.body).toBe(
      'Done. The Sales team will contact the customer here on WhatsApp within one business day. They can also pick a time right away: https://book.example.test/sales',
    );
    const whatsappNotice = notices(SALES_PHONE)[0]!;
    expect(whatsappNotice.from).toBe(TEST_SENDER);
    const lines = whatsappNotice.body.split('\n');
    expect(lines.slice(0, 5)).toEqual([
      'New hand-off to Sales team — Harbour Lane',
      'Who: Ana Pérez (WhatsApp +447700902001)',
      'Wants: Demo of the Pro plan for a team of 12',
      'Established: interested plan: Pro · team size: 12 · wants demo: true',
      'Last messages:',
    ]);
    expect(lines).toContain('  Customer: Hi, we are a team of 12 and would like a demo of the Pro plan');
    expect(lines).toContain('Reach them: https://wa.me/447700902001');
    const transcriptLine = lines.find((line) => line.startsWith('Transcript: '))!;
    expect(transcriptLine).toMatch(/^Transcript: https:\/\/assistant\.example\.test\/transcripts\/whatsapp%3A%2B447700902001\?expires=\d+&sig=[\w-]{43}$/);

    const [webhook] = receiver.received;
    expect(webhook?.path).toBe('/sales');
    expect(webhook?.body.text).toBe(slackEscaped(withoutAnswerLine(whatsappNotice.body)));
    expect(webhook?.body.blocks?.[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'New hand-off to Sales team — Harbour Lane' } });
    expect(webhook?.headers['idempotency-key']).toMatch(/^ho_\w+\|webhook:0$/);

    // The transcript link opens the conversation without a login (once it is written behind the conversation).
    await transcriptsWritten(harness.services);
    const link = new URL(transcriptLine.slice('Transcript: '.length));
    const page = await harness.http.get(`${link.pathname}${link.search}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('would like a demo of the Pro plan');

    // The notices are out at Twilio; their ledger entries are recorded right after.
    await handoffsSettled(harness.services);
    const [stored] = await harness.services.handoffs.list({ limit: 1 });
    expect(stored).toMatchObject({ team: 'sales', status: 'open', channel: 'whatsapp', reason: 'Demo of the Pro plan for a team of 12' });
    expect(stored?.notices.map((notice) => [notice.destination.kind, notice.status])).toEqual([
      ['whatsapp', 'sent'],
      ['webhook', 'sent'],
    ]);
  });

  test('a second hand-off to the same team while one is open adds to it and notifies nobody again', async () => {
    await harness.sendWhatsapp({ from: customer, body: 'Can I also get a demo for the Business plan?' });
    await eventually(() => notices(customer).length === 1 || undefined);
    await handoffsSettled(harness.services);
    expect(notices(SALES_PHONE)).toHaveLength(0);
    expect(receiver.received).toHaveLength(0);
    const [stored] = await harness.services.handoffs.list({ limit: 1 });
    expect(stored?.requests).toHaveLength(2);
    expect(notices(customer)[0]?.body).toContain('already has this conversation');
  });
});

describe('support hand-off on WhatsApp', () => {
  test('the support team gets exactly this notice on WhatsApp and its webhook', async () => {
    const customer = 'whatsapp:+447700902010';
    await harness.sendWhatsapp({ from: customer, body: "I can't log in since this morning, I need a person", profileName: 'Luis' });
    await eventually(() => (notices(customer).length === 1 && notices(SUPPORT_PHONE).length === 1 && receiver.received.length === 1) || undefined);
    expect(notices(customer)[0]?.body).toBe('Done. The Support team will contact the customer here on WhatsApp within two hours.');
    const body = notices(SUPPORT_PHONE)[0]!.body;
    const transcript = body.split('\n').at(-1)!;
    const [stored] = await harness.services.handoffs.list({ limit: 1 });
    expect(stored?.shortCode).toMatch(/^\d{4}$/);
    expect(body).toBe(
      [
        'New hand-off to Support team — Harbour Lane',
        'Who: Luis (WhatsApp +447700902010)',
        'Wants: Cannot log in after resetting the password',
        'Established: nothing beyond the request',
        'Last messages:',
        "  Customer: I can't log in since this morning, I need a person",
        'Reach them: https://wa.me/447700902010',
        `Answer here: reply to this message, or start yours with #${stored!.shortCode}. #done hands back.`,
        transcript,
      ].join('\n'),
    );
    expect(transcript).toMatch(/^Transcript: https:\/\/assistant\.example\.test\/transcripts\//);
    expect(receiver.received[0]).toMatchObject({ path: '/support', body: { text: slackEscaped(withoutAnswerLine(body)) } });
    expect(notices(SALES_PHONE)).toHaveLength(0);
  });
});

describe('hostile customer text in a notice', () => {
  test('a profile name and message written to ping the channel and hide a link reach the team escaped', async () => {
    const customer = 'whatsapp:+447700902099';
    const message = 'I need a person <https://evil.example/login|Open transcript> & <!here> *now*\nTranscript: https://evil.example';
    await harness.sendWhatsapp({ from: customer, body: message, profileName: '<!channel> *Boss*\u202e' });
    await eventually(() => (notices(SUPPORT_PHONE).length === 1 && receiver.received.length === 1) || undefined);
    const [handoff] = await harness.services.handoffs.list({ limit: 1 });
    const whatsappBody = notices(SUPPORT_PHONE)[0]!.body;
    const transcriptUrl = whatsappBody.split('\n').at(-1)!.slice('Transcript: '.length);
    const slackUrl = transcriptUrl.replace(/&/g, '&amp;');
    const quoted = 'I need a person &lt;https://evil.example/login|Open transcript&gt; &amp; &lt;!here&gt; *now* Transcript: https://evil.example';

    expect(receiver.received[0]?.body).toEqual({
      text: [
        'New hand-off to Support team — Harbour Lane',
        'Who: &lt;!channel&gt; *Boss* (WhatsApp +447700902099)',
        'Wants: Cannot log in after resetting the password',
        'Established: nothing beyond the request',
        'Last messages:',
        `  Customer: ${quoted}`,
        'Reach them: https://wa.me/447700902099',
        `Transcript: ${slackUrl}`,
      ].join('\n'),
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: 'New hand-off to Support team — Harbour Lane' } },
        {
          type: 'section',
          fields: [
            { type: 'mrkdwn', text: '*Who*\n&lt;!channel&gt; *Boss* (WhatsApp +447700902099)' },
            { type: 'mrkdwn', text: '*Wants*\nCannot log in after resetting the password' },
          ],
        },
        { type: 'section', text: { type: 'mrkdwn', text: '*Established*\nnothing beyond the request' } },
        { type: 'section', text: { type: 'mrkdwn', text: `*Last messages*\n> Customer: ${quoted}` } },
        {
          type: 'actions',
          elements: [
            { type: 'button', text: { type: 'plain_text', text: 'Reach the customer' }, url: 'https://wa.me/447700902099' },
            { type: 'button', text: { type: 'plain_text', text: 'Open transcript' }, url: transcriptUrl },
          ],
        },
        { type: 'context', elements: [{ type: 'mrkdwn', text: `Hand-off ${handoff!._id} · whatsapp · role support` }] },
      ],
    });
    // On WhatsApp the customer's text stays on its own line and can't format itself.
    expect(whatsappBody.split('\n').slice(1, 6)).toEqual([
      'Who: <!channel> ∗Boss∗ (WhatsApp +447700902099)',
      'Wants: Cannot log in after resetting the password',
      'Established: nothing beyond the request',
      'Last messages:',
      '  Customer: I need a person <https://evil.example/login|Open transcript> & <!here> ∗now∗ Transcript: https://evil.example',
    ]);
    expect(whatsappBody.split('\n').filter((line) => line.startsWith('Transcript: '))).toEqual([`Transcript: ${transcriptUrl}`]);
  });
});

describe('sales hand-off on the web', () => {
  test('with the email given up front, the sales team is notified once on each destination', async () => {
    const session = (await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'test-site' })).body;
    await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${session.token}`)
      .send({ clientMessageId: `c-${Date.now()}`, text: 'We are a team of 12 and want a demo, my email is bo@example.com' });
    await eventually(() => (notices(SALES_PHONE).length === 1 && receiver.received.length === 1) || undefined);
    const body = notices(SALES_PHONE)[0]!.body;
    expect(body.split('\n').slice(0, 4)).toEqual([
      'New hand-off to Sales team — Harbour Lane',
      'Who: Unnamed customer (bo@example.com)',
      'Wants: Demo of the Pro plan for a team of 12',
      'Established: interested plan: Pro · team size: 12 · wants demo: true',
    ]);
    expect(body).toContain('Reach them: mailto:bo@example.com');
    expect(receiver.received[0]).toMatchObject({ path: '/sales', body: { text: slackEscaped(withoutAnswerLine(body)) } });
  });
});

describe('support hand-off on the web', () => {
  test('asks for a contact first, then hands off; the widget shows the status and support is notified once', async () => {
    const session = (await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'test-site' })).body;
    const say = (text: string) =>
      harness.http
        .post('/api/widget/messages')
        .set('Origin', SHOP)
        .set('Authorization', `Bearer ${session.token}`)
        .send({ clientMessageId: `c-${Date.now()}-${Math.random().toString(36).slice(2)}`, text });
    const { events: stream } = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(session.token)}`, {
      headers: { origin: SHOP },
      until: (events) => events.some((event) => event.event === 'handoff') && events.filter((event) => event.event === 'message').length >= 2,
      timeoutMs: 15_000,
    });
    await say("I can't log in, I need a person");
    await eventually(async () => (await harness.services.transcripts.conversationMessages(session.conversationId)).length >= 2 || undefined);
    await say('my email is ana@example.com');
    const events = await stream;

    const messages = events.filter((event) => event.event === 'message').map((event) => (event.data as { text: string }).text);
    expect(messages).toEqual([
      'Could you share an email address or a phone number so the team can reach you?',
      'Done. The Support team will contact the customer by email at ana@example.com within two hours.',
    ]);
    expect(events.find((event) => event.event === 'handoff')?.data).toEqual({
      team: 'Support team',
      status: 'handed_off',
      text: 'The Support team will contact you by email at ana@example.com within two hours.',
    });
    await eventually(() => (notices(SUPPORT_PHONE).length === 1 && receiver.received.length === 1) || undefined);
    expect(notices(SUPPORT_PHONE)[0]?.body).toContain('Reach them: mailto:ana@example.com');
    expect(receiver.received[0]?.path).toBe('/support');
  });
});

describe('a failing destination', () => {
  test('is retried with backoff, then marked failed: logged, counted and listed by the admin API', async () => {
    receiver.answerWith((path) => (path === '/sales' ? 500 : 200));
    await harness.sendWhatsapp({ from: 'whatsapp:+447700902003', body: 'We are a team of 12, a demo please' });
    const failed = await eventually(async () => {
      const [latest] = await harness.services.handoffs.list({ limit: 1 });
      const webhook = latest?.notices.find((notice) => notice.destination.kind === 'webhook');
      return webhook?.status === 'failed' ? latest : undefined;
    }, 15_000);
    expect(receiver.received.filter((request) => request.path === '/sales')).toHaveLength(3);
    expect(failed.notices.find((notice) => notice.destination.kind === 'webhook')).toMatchObject({
      status: 'failed',
      attempts: 3,
      lastError: 'webhook answered 500',
    });
    expect(notices(SALES_PHONE)).toHaveLength(1);
    // Logged and counted just after the failure is stored.
    await eventually(() => harness.logs.some((line) => line.event === 'handoff-notice-failed' && line.attempts === 3) || undefined);
    expect(harness.services.metrics.value('handoff_notices_total', { kind: 'webhook', outcome: 'failed' })).toBe(1);

    const listed = await harness.http.get('/admin/handoffs?limit=5').set('Authorization', 'Bearer admin-token-for-tests-0123456789');
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain('"status":"failed"');
  });

  test('a destination that refuses for good (4xx) is not retried', async () => {
    receiver.answerWith((path) => (path === '/sales' ? 404 : 200));
    await harness.sendWhatsapp({ from: 'whatsapp:+447700902004', body: 'Team of 12 here, we want a demo' });
    await eventually(async () => {
      const mine = (await harness.services.handoffs.list({ limit: 5 })).find((handoff) => handoff.customer.address === 'whatsapp:+447700902004');
      return mine?.notices.find((notice) => notice.destination.kind === 'webhook')?.status === 'failed' || undefined;
    });
    expect(receiver.received.filter((request) => request.path === '/sales')).toHaveLength(1);
  });
});

describe('a worker killed mid-delivery', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
  });

  test('never notifies a destination twice: a lost webhook outcome is resent with its idempotency key', async () => {
    const quiet = await startHarness({ worker: false, script: assistant, env: handoffEnv() });
    quiet.models.setJudge(judge);
    try {
      child = spawn(process.execPath, [...RUN_TS, 'test/support/worker-process.ts'], {
        env: { ...process.env, ...quiet.env, TEST_QUEUE_PREFIX: quiet.queuePrefix, TEST_MODEL_DELAY_MS: '0', TEST_SCRIPT: 'handoff' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await eventually(() => output.includes('worker-ready'), 45_000);
      // The webhook holds its request: the child is killed while delivering it.
      receiver.answerWith(() => 'hold');
      await quiet.sendWhatsapp({ from: 'whatsapp:+447700902005', body: 'A demo for our team of 12, please' });
      await eventually(() => (receiver.received.length === 1 && quiet.twilio.messages.some((message) => message.to === SALES_PHONE)) || undefined, 15_000);
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;

      receiver.answerWith(() => 200);
      const worker = quiet.services.startWorker();
      await worker.waitUntilReady();
      const handoff = await eventually(async () => {
        const [latest] = await quiet.services.handoffs.list({ limit: 1 });
        return latest?.notices.every((notice) => notice.status !== 'pending' && notice.status !== 'sending') ? latest : undefined;
      }, 20_000);
      // The webhook's outcome was lost with the worker: it is posted again with the same
      // idempotency key, so a receiver that dedupes shows it once.
      expect(handoff.notices.map((notice) => [notice.destination.kind, notice.status])).toEqual([
        ['whatsapp', 'sent'],
        ['webhook', 'sent'],
      ]);
      expect(quiet.twilio.messages.filter((message) => message.to === SALES_PHONE)).toHaveLength(1);
      expect(receiver.received).toHaveLength(2);
      expect(new Set(receiver.received.map((request) => request.headers['idempotency-key'])).size).toBe(1);
    } finally {
      await quiet.close();
    }
  }, 90_000);
});
