/**
 * Contacts: a WhatsApp number linked to a customer record and the business entities it may
 * act for (accounts, sites, companies). One document per number, keyed by the number itself
 * (`_id` = `whatsapp:+<E.164>`), so the lookup a turn makes is an `_id` read — the only filter
 * FerretDB 1.x pushes down. Writes are idempotent upserts: a retried import converges.
 * This module must never decide who may see what; it stores what an operator declared.
 */
import { Schema, type Connection, type Model } from 'mongoose';
import { z } from 'zod';

export const ContactAddressSchema = z
  .string()
  .regex(/^whatsapp:\+[1-9]\d{6,14}$/, 'expected whatsapp:+<E.164 number>, e.g. whatsapp:+14155550100');

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
  entities: entityList.default([]),
});

export const ContactSchema = ContactFieldsSchema.extend({ address: ContactAddressSchema });
export type Contact = z.infer<typeof ContactSchema>;
type ContactEntity = z.infer<typeof ContactEntitySchema>;

interface ContactRecord {
  /** The WhatsApp address, `whatsapp:+<E.164>`. */
  _id: string;
  name: string;
  email?: string;
  customerId?: string;
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
    entities: { type: [{ _id: false, id: { type: String, required: true }, name: { type: String, required: true } }], default: [] },
  },
  { timestamps: true, versionKey: false },
);

export interface ContactStore {
  ensureIndexes(): Promise<void>;
  get(address: string): Promise<Contact | undefined>;
  /** Replaces the contact's fields whole (an absent email or customerId is removed). */
  upsert(contact: Contact): Promise<'created' | 'updated'>;
  /** False when no contact had that address. */
  remove(address: string): Promise<boolean>;
  /**
   * Upserts every contact, in order. Not atomic (no transactions on FerretDB): a failure
   * part-way leaves the earlier rows stored, and repeating the import converges.
   */
  importMany(contacts: readonly Contact[]): Promise<{ created: number; updated: number }>;
  /** Up to `limit` contacts ordered by address, starting after the address `after`. */
  list(limit: number, after?: string): Promise<Contact[]>;
}

function toContact(record: ContactRecord): Contact {
  return {
    address: record._id,
    name: record.name,
    ...(record.email ? { email: record.email } : {}),
    ...(record.customerId ? { customerId: record.customerId } : {}),
    entities: (record.entities ?? []).map((entity) => ({ id: entity.id, name: entity.name })),
  };
}

/** `$set` for the declared fields and `$unset` for the optional ones left out. */
function replacement(contact: Contact) {
  const { name, email, customerId, entities } = contact;
  const unset = { ...(email ? {} : { email: 1 }), ...(customerId ? {} : { customerId: 1 }) };
  return {
    $set: { name, entities, ...(email ? { email } : {}), ...(customerId ? { customerId } : {}) },
    ...(Object.keys(unset).length ? { $unset: unset } : {}),
  };
}

export function createContactStore(connection: Connection): ContactStore {
  const contacts: Model<ContactRecord> =
    (connection.models.Contact as Model<ContactRecord> | undefined) ?? connection.model<ContactRecord>('Contact', contactSchema);

  return {
    async ensureIndexes() {
      // `_id` is the only key contacts are looked up by; this creates the collection.
      await contacts.createIndexes();
    },

    async get(address) {
      const record = await contacts.findById(address).lean<ContactRecord>().exec();
      return record ? toContact(record) : undefined;
    },

    async upsert(contact) {
      const result = await contacts.updateOne({ _id: contact.address }, replacement(contact), { upsert: true }).exec();
      return result.upsertedCount > 0 ? 'created' : 'updated';
    },

    async remove(address) {
      const result = await contacts.deleteOne({ _id: address }).exec();
      return result.deletedCount > 0;
    },

    async importMany(rows) {
      if (rows.length === 0) return { created: 0, updated: 0 };
      const result = await contacts.bulkWrite(
        rows.map((contact) => ({ updateOne: { filter: { _id: contact.address }, update: replacement(contact), upsert: true } })),
        { ordered: true },
      );
      return { created: result.upsertedCount, updated: rows.length - result.upsertedCount };
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
