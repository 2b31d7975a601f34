/**
 * Who is talking, as the service verified it, and which of their entities the conversation is
 * about: built each leg from the channel's `identify` (never from anything the model or an
 * unsigned client wrote) and the session's selection. Scoped tool calls are bound to it.
 *
 * Must never accept an entity the contact does not hold: a session fact naming one (the contact
 * was relinked since, or the fact was forged) is ignored.
 */
import type { LinkedCustomer } from './select-entity.js';
import type { Caller, SessionFacts } from '../contracts/tool.js';

export const ANONYMOUS_CALLER: Caller = Object.freeze({ kind: 'anonymous' });

/** The caller for `contact`, with the entity the session selected if the contact holds it. */
export function callerFor(contact: LinkedCustomer | undefined, session: Readonly<SessionFacts>): Caller {
  if (!contact) return ANONYMOUS_CALLER;
  const entities = contact.entities.map((entity) => ({ id: entity.id, name: entity.name }));
  const selected = typeof session.entityId === 'string' ? entities.find((entity) => entity.id === session.entityId) : undefined;
  const entity = selected ?? (entities.length === 1 ? entities[0] : undefined);
  return {
    kind: 'contact',
    name: contact.name,
    ...(contact.email ? { email: contact.email } : {}),
    ...(contact.customerId ? { customerId: contact.customerId } : {}),
    entities,
    ...(entity ? { entity } : {}),
  };
}

/** The same caller once the session changed during a leg (e.g. `select_entity` chose an entity). */
export function reselect(caller: Caller, session: Readonly<SessionFacts>): Caller {
  if (caller.kind === 'anonymous') return caller;
  const selected = typeof session.entityId === 'string' ? caller.entities.find((entity) => entity.id === session.entityId) : undefined;
  return selected ? { ...caller, entity: selected } : caller;
}

/** Grounding line for the caller: who the service verified, their companies and the selected one. */
export function describeCaller(caller: Caller, anonymousText: string): string {
  if (caller.kind === 'anonymous') return anonymousText;
  const entities = caller.entities.map((entity) => `${entity.name} (${entity.id})`).join(', ');
  const selected = caller.entity ? ` Selected company: ${caller.entity.name} (${caller.entity.id}).` : '';
  return `Linked customer ${caller.name}${caller.email ? ` <${caller.email}>` : ''}; companies: ${entities || 'none'}.${selected}`;
}
