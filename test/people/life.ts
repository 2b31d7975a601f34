/**
 * A person's life across both channels for the people suites: WhatsApp messages, a photo, a
 * hand-off taken and handed back by a teammate (with the suggestion it drafts), a rating with a
 * comment, and a verified widget visit with its own messages; and a scan of every store for
 * planted strings.
 */
import { createHmac } from 'node:crypto';
import { expect } from '@jest/globals';
import { createDeterministicModels, keywordJudge, type DeterministicModels, type Script } from '../support/deterministic-model.js';
import { eventually, type Harness } from '../support/harness.js';
import { handoffsSettled, transcriptsWritten, turnsSettled } from '../support/settled.js';
import { OGG_BYTES, PNG_BYTES } from '../support/media-fixtures.js';

const ADMIN_TOKEN = 'people-admin-token-0123456789abcdef';
const ANA = 'whatsapp:+34600915001';
const SHOP = 'https://people-shop.example.test';
const IDENTITY_SECRET = 'people-identity-secret-0123456789-0123456789';
const SITES = JSON.stringify([{ key: 'people-site', name: 'Harbour Lane', origins: [SHOP], identitySecret: IDENTITY_SECRET }]);

/** The model: hands off on "person", otherwise echoes. */
export const assistant: Script = (call) => {
  if (call.toolResults.at(-1)) return { text: 'Done. The team will answer you here.' };
  if (/person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Cannot log in' } }] };
  }
  return { text: `Happy to help: ${call.userText}` };
};

/** The judge: keyword routing; the support role learns the customer's issue from their words; a warranty question needs the business's knowledge (and finds none). */
const judge: Script = async (call) => {
  const json = JSON.parse(((await keywordJudge(call)) as { text: string }).text) as Record<string, unknown>;
  const latest =
    call.userText
      .split('\n')
      .filter((line) => line.startsWith('Customer: '))
      .at(-1)
      ?.slice('Customer: '.length) ?? call.userText;
  const facts = json.facts as Record<string, unknown> | undefined;
  if (facts && 'role.support.issue' in facts) facts['role.support.issue'] = latest;
  if ('knowledge' in json && /warranty/i.test(latest)) json.knowledge = { needed: true, terms: 'warranty blender' };
  return { text: JSON.stringify(json) };
};

/** The models a people suite runs on: `script` answers, the judge above judges. */
export const peopleModels = (script: Script = assistant): DeterministicModels => createDeterministicModels(script, judge);

export function peopleEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ADMIN_TOKEN,
    CSAT_ENABLED: 'true',
    CSAT_AFTER_MINUTES: '0.02',
    WEB_SITES: SITES,
    NOTICE_BACKOFF_MS: '20',
    HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support team', members: [{ name: 'Ana', whatsapp: ANA }] } }),
    ...extra,
  };
}

export interface Person {
  number: string;
  address: string;
  email: string;
  name: string;
  userId: string;
  /** Every text the person wrote. */
  texts: string[];
}

export function person(tag: string, digits: string): Person {
  const number = `+4477009${digits}`;
  return {
    number,
    address: `whatsapp:${number}`,
    email: `${tag}.hart@example.test`,
    name: `${tag[0]!.toUpperCase()}${tag.slice(1)} Hartwell`,
    userId: `u-${tag}`,
    texts: [],
  };
}

const admin = (harness: Harness) => ({
  get: (path: string) => harness.http.get(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
  put: (path: string, body: object) => harness.http.put(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send(body),
  post: (path: string) => harness.http.post(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
});
export { admin };

function signedUser(who: Person) {
  const ts = String(Math.floor(Date.now() / 1000));
  const payload = [who.userId, who.email, who.name, ts].join('\n');
  return { id: who.userId, email: who.email, name: who.name, ts, hash: createHmac('sha256', IDENTITY_SECRET).update(payload).digest('hex') };
}

/** The person's WhatsApp life: messages, a photo, a hand-off taken by Ana and handed back, a rating with a comment. */
export async function whatsappLife(harness: Harness, who: Person): Promise<void> {
  const to = (address: string) => harness.twilio.messages.filter((message) => message.to === address);
  const say = async (body: string, extra: Partial<Parameters<Harness['sendWhatsapp']>[0]> = {}) => {
    who.texts.push(body);
    const response = await harness.sendWhatsapp({ from: who.address, body, profileName: who.name, ...extra });
    expect(response.status).toBe(200);
  };
  const count = () => to(who.address).length;
  // The help center knows one thing, so a question it cannot answer is listed as unanswered.
  const faq = await admin(harness).post('/admin/knowledge/faq').send({ question: 'How long does delivery take?', answer: 'Two to three days.' });
  expect(faq.status).toBeLessThan(300);
  let before = count();
  await say(`Hello, my order for ${who.name} never arrived`);
  await eventually(() => count() > before || undefined, 20_000);
  before = count();
  const photo = harness.twilio.addMedia({ body: PNG_BYTES, contentType: 'image/png' });
  await say(`Here is a photo of the parcel ${who.userId}`, { media: [{ url: photo, contentType: 'image/png' }] });
  await eventually(() => count() > before || undefined, 20_000);
  before = count();
  const voice = harness.twilio.addMedia({ body: OGG_BYTES, contentType: 'audio/ogg' });
  await say(`A voice note about my blender, ${who.name}`, { media: [{ url: voice, contentType: 'audio/ogg' }] });
  await eventually(() => count() > before || undefined, 20_000);
  before = count();
  await say(`Does the warranty cover the blender of ${who.name}?`);
  await eventually(() => count() > before || undefined, 20_000);
  // A hand-off: Ana takes it by replying to the notice, answers, and hands back.
  await say(`I want to speak to a person about ${who.email}`);
  const notice = await eventually(() => to(ANA).find((message) => message.body.includes(who.number)), 20_000);
  await handoffsSettled(harness.services);
  await harness.sendWhatsapp({ from: ANA, body: `Hi ${who.name}, Ana here, checking now`, repliedTo: notice.sid });
  await eventually(() => to(who.address).some((message) => message.body.includes('Ana here')) || undefined, 20_000);
  await say(`Thanks Ana, the tracking code is TRK-${who.userId}`);
  await eventually(() => to(ANA).some((message) => message.body.includes(`TRK-${who.userId}`)) || undefined, 20_000);
  await harness.sendWhatsapp({ from: ANA, body: '#done' });
  await eventually(() => to(who.address).some((message) => message.body.startsWith("You're back with our assistant")) || undefined, 20_000);
  // A rating and a comment.
  const question = await eventually(() => to(who.address).find((message) => message.choices?.length === 5), 30_000);
  const good = question.choices![3]!;
  await say(good.title, { listRow: { id: good.id, title: good.title } });
  await eventually(() => to(who.address).some((message) => message.body.startsWith('Thank you! Anything')) || undefined, 20_000);
  await say(`Quick and clear, thank you from ${who.name}`);
  await eventually(() => to(who.address).some((message) => message.body === 'Thank you for your feedback!') || undefined, 20_000);
  await turnsSettled(harness.services);
  await transcriptsWritten(harness.services);
}

/** The person's verified widget visit: a session signed as them and two messages; the conversation key. */
export async function widgetLife(harness: Harness, who: Person): Promise<string> {
  const session = await harness.http
    .post('/api/widget/session')
    .set('Origin', SHOP)
    .send({ siteKey: 'people-site', user: signedUser(who) });
  expect(session.status).toBe(200);
  const token = session.body.token as string;
  const conversationId = session.body.conversationId as string;
  for (const [index, text] of [`Widget hello from ${who.name}`, `Can you check ${who.email} please`].entries()) {
    who.texts.push(text);
    const sent = await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: `client-${who.userId}-${index}`, text });
    expect(sent.status).toBe(202);
    await eventually(
      async () => (await harness.services.transcripts.recent(conversationId)).some((entry) => entry.text.startsWith('Happy to help: ' + text)) || undefined,
      20_000,
    );
  }
  await turnsSettled(harness.services);
  await transcriptsWritten(harness.services);
  return conversationId;
}

export interface Hit {
  store: string;
  where: string;
  needle: string;
}

/** Every string in `value` (keys too), Buffers and binaries as UTF-8. */
function textOf(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner && typeof inner === 'object' && 'buffer' in inner && (inner as { _bsontype?: string })._bsontype === 'Binary') {
      return Buffer.from((inner as { buffer: Uint8Array }).buffer).toString('utf8');
    }
    return inner;
  });
}

/** Every MongoDB collection (GridFS's files and chunks among them), every Redis key's name and value (BullMQ's queues are Redis keys): where a needle occurs. */
export async function scanStores(harness: Harness, needles: readonly string[]): Promise<Hit[]> {
  const hits: Hit[] = [];
  const check = (store: string, where: string, text: string) => {
    const lower = text.toLowerCase();
    for (const needle of needles) if (lower.includes(needle.toLowerCase())) hits.push({ store, where, needle });
  };
  const db = harness.services.mongo.db!;
  for (const { name } of await db.listCollections().toArray()) {
    for (const document of await db.collection(name).find({}).toArray()) check(`mongo:${name}`, String(document._id), textOf(document));
  }
  const redis = harness.services.redis;
  const keys = await redis.keys('*');
  for (const key of keys) {
    check('redis-key', key, key);
    const type = await redis.type(key);
    const value =
      type === 'string'
        ? await redis.getBuffer(key).then((buffer) => buffer?.toString('utf8'))
        : type === 'hash'
          ? await redis.hgetall(key)
          : type === 'list'
            ? await redis.lrange(key, 0, -1)
            : type === 'set'
              ? await redis.smembers(key)
              : type === 'zset'
                ? await redis.zrange(key, '0', '-1')
                : type === 'stream'
                  ? await redis.xrange(key, '-', '+')
                  : undefined;
    check(`redis:${type}`, key, textOf(value) ?? '');
  }
  return hits;
}

export { transcriptsWritten, turnsSettled };
