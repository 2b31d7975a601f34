/**
 * A person the contact index knows by e-mail only — a contact with a WhatsApp number and an
 * e-mail but no website user id, who also chats in the widget as a user the site verified with
 * its own id and that e-mail — is erased from the e-mail alone: both channels' conversations are
 * found, and a scan of every store finds none of their number, e-mail, user id, name or words,
 * while another person's data stays.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { admin, peopleEnv, peopleModels, person, scanStores, transcriptsWritten, turnsSettled, whatsappLife, widgetLife } from './life.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ models: peopleModels(), env: peopleEnv() });
});
afterAll(async () => harness.close());

const iris = person('iris', '15201');
const bob = person('bob', '15202');
const needlesOf = (who: typeof iris) => [who.number, who.email, who.userId, who.name, ...who.texts.filter((text) => !text.startsWith('⭐'))];

test('erased by e-mail: the WhatsApp number it is linked to and the widget chats verified with it, nothing left', async () => {
  // Iris's contact names her number and e-mail; the site's user id for her is nowhere in it.
  const contact = await admin(harness).put(`/admin/contacts/${encodeURIComponent(iris.address)}`, { name: iris.name, email: iris.email });
  expect(contact.status).toBeLessThan(300);
  expect((await admin(harness).put(`/admin/contacts/${encodeURIComponent(bob.address)}`, { name: bob.name, email: bob.email })).status).toBeLessThan(300);
  await whatsappLife(harness, iris);
  const web = await widgetLife(harness, iris);
  bob.texts.push('Bob asks about the green teapot');
  await harness.sendWhatsapp({ from: bob.address, body: bob.texts[0]!, profileName: bob.name });
  await eventually(() => harness.twilio.messages.some((message) => message.to === bob.address) || undefined, 20_000);
  await turnsSettled(harness.services);
  await transcriptsWritten(harness.services);

  const exported = await admin(harness).get(`/admin/people/${encodeURIComponent(iris.email)}/export`);
  expect(exported.status).toBe(200);
  expect(exported.body.conversations.map((conversation: { key: string }) => conversation.key).sort()).toEqual([iris.address, web].sort());

  const erased = await admin(harness).post(`/admin/people/${encodeURIComponent(iris.email)}/erase`);
  expect(erased.status).toBe(200);
  expect(erased.body).toMatchObject({ status: 'done', nothing: false });
  expect(erased.body.counts.mongo).toMatchObject({ conversations: 2, contacts: 1 });
  // The erasure's own record included: its counts name key families, never an id a client chose (its message ids carry her user id here).
  expect(await scanStores(harness, needlesOf(iris))).toEqual([]);
  const bobHits = await scanStores(harness, needlesOf(bob));
  expect(bobHits.some((hit) => hit.store === 'mongo:messages' && hit.needle === bob.texts[0])).toBe(true);
  expect(bobHits.some((hit) => hit.store === 'mongo:contacts')).toBe(true);
}, 240_000);

test('a verified widget user no contact declares is erased by the e-mail the site signed', async () => {
  const nora = person('nora', '15203');
  const web = await widgetLife(harness, nora);
  const erased = await admin(harness).post(`/admin/people/${encodeURIComponent(nora.email)}/erase`);
  expect(erased.status).toBe(200);
  expect(erased.body.counts.mongo).toMatchObject({ conversations: 1 });
  expect(await harness.services.mongo.collection<{ _id: string }>('conversations').findOne({ _id: web })).toBeNull();
  expect(await scanStores(harness, [nora.email, nora.userId, nora.name, ...nora.texts])).toEqual([]);
}, 120_000);
