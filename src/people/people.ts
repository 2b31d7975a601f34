/**
 * The people service: an id resolved to a person, their export, their erasure, and the list of
 * erasures — what the admin routes and `npm run people` call.
 */
import type { ContactIndex } from '../contacts/contact-index.js';
import { createErasures, totalOf, type ErasureDeps, type ErasureRecord } from './erasures.js';
import { exportPerson, textsOf, type ExportDeps } from './export.js';
import { parsePersonId } from './person-id.js';
import { resolvePerson } from './resolve.js';

export type PeopleDeps = ErasureDeps & ExportDeps & { contacts: ContactIndex };

export type PeopleService = ReturnType<typeof createPeople>;

export function createPeople(deps: PeopleDeps) {
  const erasures = createErasures(deps);
  const resolve = async (raw: string) => {
    const id = parsePersonId(raw);
    return id ? resolvePerson(deps.contacts, id) : undefined;
  };
  return {
    /** Undefined when the id has none of the accepted forms. */
    async export(raw: string) {
      const person = await resolve(raw);
      return person ? exportPerson(deps, raw, person) : undefined;
    },
    /** Undefined when the id has none of the accepted forms; `nothing` when no store held anything of the person. */
    async erase(raw: string, requestedBy: string): Promise<(ErasureRecord & { nothing: boolean }) | undefined> {
      const person = await resolve(raw);
      if (!person) return undefined;
      const record = await erasures.erase(person, await textsOf(deps.connection, person), requestedBy);
      return { ...record, nothing: totalOf(record.counts) === 0 };
    },
    list: (limit?: number) => erasures.list(limit),
    resume: erasures.resume,
    start: erasures.start,
    close: erasures.close,
  };
}
