/**
 * From an id to a person: the contact it names (through the contact index: a number, a user id or
 * an e-mail alias), the identities that contact declares, and every conversation key that is
 * theirs — the WhatsApp conversation of their number, the widget chats in which the web channel
 * identified their verified user id or e-mail (`contact-conversations.ts`: an e-mail leads to the
 * user ids the site verified with it, and back), and every chat of a widget visitor named
 * directly (found by the key's prefix).
 */
import type { Contact } from '../contacts/contact-store.js';
import type { ContactIndex } from '../contacts/contact-index.js';
import { isChatIdentity } from '../contacts/contact-conversations.js';
import type { PersonId } from './person-id.js';

export interface Person {
  /** The contact record, when one is linked. */
  contact: Contact | undefined;
  /** Conversation keys known exactly. */
  conversationKeys: string[];
  /** `web:<site>:<visitor>:` prefixes: every chat of those visitors. */
  visitorPrefixes: string[];
  /** The external ids whose conversation sets lead here. */
  externalIds: string[];
  /** Identifiers that may appear in key names: the number, the e-mail, the user id. */
  identifiers: string[];
}

const WHATSAPP = /^whatsapp:(\+\d+)$/;

/** An e-mail among the identifiers (a number, `ext:`/`user:` ids and e-mails). */
export const isEmail = (identifier: string) => !identifier.includes(':') && identifier.includes('@');

/** The visitor prefix of a widget conversation key (`web:<site>:<visitor>:<chat>`). */
const visitorPrefixOf = (key: string) => /^(web:[^:]+:[^:]+:)[^:]+$/.exec(key)?.[1];

export async function resolvePerson(contacts: Pick<ContactIndex, 'get' | 'findByAlias' | 'conversations'>, id: PersonId): Promise<Person> {
  let contact: Contact | undefined;
  if (id.kind === 'whatsapp') contact = await contacts.get(id.address);
  if (id.kind === 'user') contact = (await contacts.findByAlias(`ext:${id.externalId}`)) ?? (await contacts.get(`user:${id.externalId}`));
  if (id.kind === 'email') contact = await contacts.findByAlias(`email:${id.email}`);

  const keys = new Set<string>();
  const prefixes = new Set<string>();
  const externalIds = new Set<string>();
  const identifiers = new Set<string>();
  if (id.kind === 'whatsapp') keys.add(id.address);
  if (id.kind === 'user') externalIds.add(id.externalId);
  if (id.kind === 'email') identifiers.add(id.email);
  if (id.kind === 'visitor') prefixes.add(id.prefix);
  if (contact) {
    if (WHATSAPP.test(contact.address)) keys.add(contact.address);
    const externalId = contact.externalId ?? (contact.address.startsWith('user:') ? contact.address.slice('user:'.length) : undefined);
    if (externalId) externalIds.add(externalId);
    if (contact.email) identifiers.add(contact.email.toLowerCase());
  }
  // The verified user's chats, by user id and by e-mail; each set names the identities noted with it.
  const walked = new Set<string>();
  const pending = [...[...externalIds].map((externalId) => `user:${externalId}`), ...[...identifiers].filter(isEmail).map((email) => `email:${email}`)];
  for (let identity = pending.pop(); identity !== undefined; identity = pending.pop()) {
    if (walked.has(identity)) continue;
    walked.add(identity);
    if (identity.startsWith('user:')) externalIds.add(identity.slice('user:'.length));
    else identifiers.add(identity.slice('email:'.length));
    for (const member of await contacts.conversations.of(identity)) {
      if (isChatIdentity(member)) pending.push(member);
      else keys.add(member);
    }
  }
  for (const externalId of externalIds) identifiers.add(`ext:${externalId}`).add(`user:${externalId}`);
  for (const key of keys) {
    const prefix = visitorPrefixOf(key);
    if (prefix) prefixes.add(prefix);
  }
  for (const key of keys) {
    const number = WHATSAPP.exec(key)?.[1];
    if (number) identifiers.add(number);
  }
  return { contact, conversationKeys: [...keys], visitorPrefixes: [...prefixes], externalIds: [...externalIds], identifiers: [...identifiers] };
}
