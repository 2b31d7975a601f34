/**
 * Contacts: a customer record and the business entities it may act for (accounts, sites,
 * companies), keyed by its address: a WhatsApp number (`whatsapp:+<E.164>`) or, for a customer
 * known only from the website, the business's own user id (`user:<external id>`). The lookup a
 * turn makes is an `_id` read — the only filter FerretDB 1.x pushes down — so a website-verified
 * user is found through `_id`-keyed alias documents (`ext:<external id>`, `email:<lowercase>`)
 * that the store maintains on every upsert, import and removal. An alias is only an index: a
 * lookup trusts it only when the contact it names still declares that id or email, so a write
 * cut short by a crash can leave a stale alias but never a wrong match.
 * Writes are idempotent upserts: a retried import converges.
 * This module must never decide who may see what; it stores what an operator declared.
 */
import { Schema, type Connection, type Model } from 'mongoose';
import { z } from 'zod';
import { AppError } from '../errors/index.js';

const EXTERNAL_ID = /^[A-Za-z0-9._@+-]{1,128}$/;
const USER_ADDRESS_PREFIX = 'user:';

export const ContactAddressSchema = z
  .string()
  .refine(
    (value) => /^whatsapp:\+[1-9]\d{6,14}$/.test(value) || (value.startsWith(USER_ADDRESS_PREFIX) && EXTERNAL_ID.test(value.slice(USER_ADDRESS_PREFIX.length))),
    'expected whatsapp:+<E.164 number>, e.g. whatsapp:+14155550100, or user:<external id> for a contact without WhatsApp',
  );

/** The business's own id for a website user, as the site signs it (`data-user-id`). */
export const ExternalIdSchema = z.string().regex(EXTERNAL_ID, 'expected 1–128 letters, digits, . _ @ + or -');

const ContactEntitySchema = z.strictObject({
  id: z.string().trim().min(1).max(64),
  name: z.string().trim().min(1).max(120),
});

const MAX_CONTACT_ENTITIES = 50;

const entityList = z
  .array(ContactEntitySchema)
  .max(MAX_CONTACT_ENTITIES)
  .superRefine((entities, context) => {
    const seen = new Map<string, number>();
    entities.forEach((entity, index) => {
      const first = seen.get(entity.id);
      if (first === undefined) seen.set(entity.id, index);
      else context.addIssue({ code: 'custom', path: [index, 'id'], message: `duplicate entity id (same as entities.${first}.id)` });
    });
  });

/** Fields an operator declares for a number; unknown fields are refused, not dropped. */
export const ContactFieldsSchema = z.strictObject({
  name: z.string().trim().min(1).max(120),
  email: z.email().max(254).optional(),
  customerId: z.string().trim().min(1).max(128).optional(),
  /** The website's id for this customer; a `user:` address implies it. */
  externalId: ExternalIdSchema.optional(),
  entities: entityList.default([]),
});

export const ContactSchema = ContactFieldsSchema.extend({ address: ContactAddressSchema }).superRefine((contact, context) => {
  const implied = impliedExternalId(contact.address);
  if (implied !== undefined && contact.externalId !== undefined && contact.externalId !== implied) {
    context.addIssue({ code: 'custom', path: ['externalId'], message: `differs from the external id in the address (${implied})` });
  }
});
export type Contact = z.infer<typeof ContactSchema>;
type ContactEntity = z.infer<typeof ContactEntitySchema>;

interface ContactRecord {
  /** The address, `whatsapp:+<E.164>` or `user:<external id>`. */
  _id: string;
  name: string;
  email?: string;
  customerId?: string;
  externalId?: string;
  entities: ContactEntity[];
  createdAt: Date;
  updatedAt: Date;
}

const contactSchema = new Schema<ContactRecord>(
  {
    _id: { type: String, required: true },
    name: { type: String, required: true },
    email: String,
    customerId: String,
    externalId: String,
    entities: { type: [{ _id: false, id: { type: String, required: true }, name: { type: String, required: true } }], default: [] },
  },
  { timestamps: true, versionKey: false },
);

/** `ext:<external id>` → contact address, `email:<lowercase email>` → contact address. */
interface AliasRecord {
  _id: string;
  contact: string;
}

const aliasSchema = new Schema<AliasRecord>({ _id: { type: String, required: true }, contact: { type: String, required: true } }, { versionKey: false });

/** Another contact already holds an external id or email this contact declares. */
export class ContactConflictError extends AppError {
  constructor(
    /** `index`: the import row, when the write was an import. */
    readonly conflicts: readonly { field: 'externalId' | 'email'; heldBy: string; index?: number }[],
  ) {
    super(`already declared by another contact: ${conflicts.map((conflict) => `${conflict.field} (${conflict.heldBy})`).join(', ')}`);
  }
}

export interface ContactStore {
  ensureIndexes(): Promise<void>;
  get(address: string): Promise<Contact | undefined>;
  /** The contact a website-verified user is: by external id first, then by email. */
  findVerifiedUser(user: { externalId: string; email?: string | undefined }): Promise<Contact | undefined>;
  /** The contact an alias (`ext:<id>`, `email:<lowercase>`) names, only if it still declares it. */
  findByAlias(alias: string): Promise<Contact | undefined>;
  /**
   * Replaces the contact's fields whole (an absent email, customerId or externalId is removed).
   * Throws ContactConflictError when another contact holds its external id or email.
   */
  upsert(contact: Contact): Promise<'created' | 'updated'>;
  /** False when no contact had that address. Its aliases go with it. */
  remove(address: string): Promise<boolean>;
  /**
   * Upserts every contact, in order, after checking no row's external id or email is held by
   * another contact (ContactConflictError, nothing written). Not atomic (no transactions on
   * FerretDB): a failure part-way leaves the earlier rows stored, and repeating it converges.
   */
  importMany(contacts: readonly Contact[]): Promise<{ created: number; updated: number }>;
  /** Up to `limit` contacts ordered by address, starting after the address `after`. */
  list(limit: number, after?: string): Promise<Contact[]>;
}

function impliedExternalId(address: string): string | undefined {
  return address.startsWith(USER_ADDRESS_PREFIX) ? address.slice(USER_ADDRESS_PREFIX.length) : undefined;
}

export const externalAlias = (externalId: string) => `ext:${externalId}`;
export const emailAlias = (email: string) => `email:${email.toLowerCase()}`;

/** The alias keys a contact declares, with the field each comes from. */
export function aliasesOf(contact: Pick<Contact, 'address' | 'email' | 'externalId'>): Map<string, 'externalId' | 'email'> {
  const aliases = new Map<string, 'externalId' | 'email'>();
  const externalId = contact.externalId ?? impliedExternalId(contact.address);
  if (externalId) aliases.set(externalAlias(externalId), 'externalId');
  if (contact.email) aliases.set(emailAlias(contact.email), 'email');
  return aliases;
}

/**
 * An upsert by `_id`, once more if it lost a race: two writers upserting the same new `_id` can
 * both miss it, and the second insert fails with a duplicate key (MongoDB retries this itself in
 * some cases, FerretDB never). Run again, the upsert finds the document and updates it.
 */
async function upsertById<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if ((error as { code?: unknown }).code !== 11000) throw error;
    return run();
  }
}

function toContact(record: ContactRecord): Contact {
  return {
    address: record._id,
    name: record.name,
    ...(record.email ? { email: record.email } : {}),
    ...(record.customerId ? { customerId: record.customerId } : {}),
    ...(record.externalId ? { externalId: record.externalId } : {}),
    entities: (record.entities ?? []).map((entity) => ({ id: entity.id, name: entity.name })),
  };
}

/** `$set` for the declared fields and `$unset` for the optional ones left out. */
function replacement(contact: Contact) {
  const { name, email, customerId, externalId, entities } = contact;
  const unset = { ...(email ? {} : { email: 1 }), ...(customerId ? {} : { customerId: 1 }), ...(externalId ? {} : { externalId: 1 }) };
  return {
    $set: { name, entities, ...(email ? { email } : {}), ...(customerId ? { customerId } : {}), ...(externalId ? { externalId } : {}) },
    ...(Object.keys(unset).length ? { $unset: unset } : {}),
  };
}

export function createContactStore(connection: Connection): ContactStore {
  const contacts: Model<ContactRecord> =
    (connection.models.Contact as Model<ContactRecord> | undefined) ?? connection.model<ContactRecord>('Contact', contactSchema);
  const aliases: Model<AliasRecord> =
    (connection.models.ContactAlias as Model<AliasRecord> | undefined) ?? connection.model<AliasRecord>('ContactAlias', aliasSchema);

  const get = async (address: string) => {
    const record = await contacts.findById(address).lean<ContactRecord>().exec();
    return record ? toContact(record) : undefined;
  };

  /** The contact an alias names, only if that contact still declares it. */
  const byAlias = async (alias: string) => {
    const record = await aliases.findById(alias).lean<AliasRecord>().exec();
    if (!record) return undefined;
    const contact = await get(record.contact);
    return contact && aliasesOf(contact).has(alias) ? contact : undefined;
  };

  /** Aliases in `wanted` that a contact other than `address` holds (a stale alias holds nothing). */
  const conflictsFor = async (address: string, wanted: Map<string, 'externalId' | 'email'>) => {
    const conflicts: { field: 'externalId' | 'email'; heldBy: string }[] = [];
    for (const [alias, field] of wanted) {
      const holder = await byAlias(alias);
      if (holder && holder.address !== address) conflicts.push({ field, heldBy: holder.address });
    }
    return conflicts;
  };

  /** Drops aliases that still point at `address` (one another contact took over stays). */
  const release = async (address: string, stale: Iterable<string>) => {
    for (const alias of stale) await aliases.deleteOne({ _id: alias, contact: address }).exec();
  };

  /** Writes one contact and moves its aliases: new ones first, then the contact, then old ones go. */
  const write = async (contact: Contact): Promise<'created' | 'updated'> => {
    const previous = await get(contact.address);
    const wanted = aliasesOf(contact);
    const conflicts = await conflictsFor(contact.address, wanted);
    if (conflicts.length > 0) throw new ContactConflictError(conflicts);
    for (const alias of wanted.keys()) {
      await upsertById(() => aliases.updateOne({ _id: alias }, { $set: { contact: contact.address } }, { upsert: true }).exec());
    }
    const result = await upsertById(() => contacts.updateOne({ _id: contact.address }, replacement(contact), { upsert: true }).exec());
    if (previous)
      await release(
        contact.address,
        [...aliasesOf(previous).keys()].filter((alias) => !wanted.has(alias)),
      );
    return result.upsertedCount > 0 ? 'created' : 'updated';
  };

  return {
    async ensureIndexes() {
      // `_id` is the only key contacts and aliases are looked up by; this creates the collections.
      await Promise.all([contacts.createIndexes(), aliases.createIndexes()]);
    },

    get,

    async findVerifiedUser({ externalId, email }) {
      return (await byAlias(externalAlias(externalId))) ?? (email ? await byAlias(emailAlias(email)) : undefined);
    },

    findByAlias: byAlias,

    upsert: write,

    async remove(address) {
      const previous = await get(address);
      const result = await contacts.deleteOne({ _id: address }).exec();
      if (previous) await release(address, aliasesOf(previous).keys());
      return result.deletedCount > 0;
    },

    async importMany(rows) {
      const conflicts = [];
      for (const [index, contact] of rows.entries()) {
        conflicts.push(...(await conflictsFor(contact.address, aliasesOf(contact))).map((conflict) => ({ ...conflict, index })));
      }
      if (conflicts.length > 0) throw new ContactConflictError(conflicts);
      let created = 0;
      for (const contact of rows) if ((await write(contact)) === 'created') created += 1;
      return { created, updated: rows.length - created };
    },

    async list(limit, after) {
      // An operator's listing, off the hot path: on FerretDB the range filter scans.
      const records = await contacts
        .find(after === undefined ? {} : { _id: { $gt: after } })
        .sort({ _id: 1 })
        .limit(limit)
        .lean<ContactRecord[]>()
        .exec();
      return records.map(toContact);
    },
  };
}
