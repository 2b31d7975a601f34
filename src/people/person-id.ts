/**
 * The ways an operator names a person in `/admin/people/{id}` and `npm run people`: a WhatsApp
 * number (`whatsapp:+<E.164>` or `+<E.164>`), a website user (`user:<external id>`), an e-mail
 * (`email:<address>` or the bare address) or a widget visitor (`web:<site key>:<visitor id>`, as a
 * widget conversation key begins). Anything else is refused with the forms it accepts.
 */
import { z } from 'zod';
import { ExternalIdSchema } from '../contacts/contact-store.js';

export type PersonId =
  { kind: 'whatsapp'; address: string } | { kind: 'user'; externalId: string } | { kind: 'email'; email: string } | { kind: 'visitor'; prefix: string };

export const PERSON_ID_FORMS = 'expected whatsapp:+<E.164 number>, +<E.164 number>, user:<external id>, email:<address> or web:<site key>:<visitor id>';

const NUMBER = /^\+[1-9]\d{6,14}$/;
const VISITOR = /^web:[A-Za-z0-9_-]{1,64}:[A-Za-z0-9_-]{8,64}$/;

/** The person an id names, or undefined when it has none of the accepted forms. */
export function parsePersonId(raw: string): PersonId | undefined {
  const id = raw.trim();
  if (id.length === 0 || id.length > 300) return undefined;
  const number = id.replace(/^whatsapp:/, '');
  if (NUMBER.test(number)) return { kind: 'whatsapp', address: `whatsapp:${number}` };
  if (id.startsWith('user:')) {
    const externalId = ExternalIdSchema.safeParse(id.slice('user:'.length));
    return externalId.success ? { kind: 'user', externalId: externalId.data } : undefined;
  }
  const email = z
    .email()
    .max(254)
    .safeParse(id.replace(/^email:/, ''));
  if (email.success) return { kind: 'email', email: email.data.toLowerCase() };
  if (VISITOR.test(id)) return { kind: 'visitor', prefix: `${id}:` };
  return undefined;
}
