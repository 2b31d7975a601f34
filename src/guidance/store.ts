/**
 * MongoDB is guidance's record: `guidance_drafts` (one document per draft entry, `_id` its id)
 * and `guidance_versions` (one document per published version, `_id` its number, never changed
 * once written). Reads and writes go by `_id` (FerretDB 1.x pushes down nothing else); the only
 * scans are the operator's draft listing and the version numbers (ids only), never near a turn.
 * A version number is taken by inserting it: two publishers racing for the same number get one
 * success and one duplicate-key refusal, so no version is ever overwritten.
 */
import type { Connection, mongo } from 'mongoose';
import { isDuplicateKeyError } from '../errors/index.js';
import type { GuidanceEntry, PublishedVersion } from './model.js';

interface DraftDocument extends GuidanceEntry {
  _id: string;
}
interface VersionDocument extends Omit<PublishedVersion, 'version'> {
  _id: number;
}

export interface GuidanceStore {
  drafts(): Promise<GuidanceEntry[]>;
  draft(id: string): Promise<GuidanceEntry | undefined>;
  putDraft(entry: GuidanceEntry): Promise<void>;
  /** false: there was no such entry. */
  removeDraft(id: string): Promise<boolean>;
  /** Every published version's number, oldest first. */
  versionNumbers(): Promise<number[]>;
  version(version: number): Promise<PublishedVersion | undefined>;
  /** The newest published version (undefined: nothing was ever published). */
  latest(): Promise<PublishedVersion | undefined>;
  /** Inserts a version under its number; false when that number is taken (another publish won). */
  insertVersion(version: PublishedVersion): Promise<boolean>;
}

export function createGuidanceStore(connection: Connection): GuidanceStore {
  const drafts = () => connection.collection<DraftDocument>('guidance_drafts') as unknown as mongo.Collection<DraftDocument>;
  const versions = () => connection.collection<VersionDocument>('guidance_versions') as unknown as mongo.Collection<VersionDocument>;
  const entryOf = ({ _id, ...entry }: DraftDocument): GuidanceEntry => ({ ...entry, id: _id });
  const versionOf = ({ _id, ...rest }: VersionDocument): PublishedVersion => ({ ...rest, version: _id });
  const versionNumbers = async () => {
    const found = await versions()
      .find({}, { projection: { _id: 1 } })
      .toArray();
    return found.map((document) => document._id).sort((a, b) => a - b);
  };
  const version = async (number: number) => {
    const found = await versions().findOne({ _id: number });
    return found ? versionOf(found) : undefined;
  };
  return {
    async drafts() {
      const found = await drafts().find({}).toArray();
      return found.map(entryOf).sort((a, b) => a.id.localeCompare(b.id));
    },
    async draft(id) {
      const found = await drafts().findOne({ _id: id });
      return found ? entryOf(found) : undefined;
    },
    async putDraft({ id, ...entry }) {
      await drafts().replaceOne({ _id: id }, { ...entry, _id: id } as DraftDocument, { upsert: true });
    },
    async removeDraft(id) {
      return (await drafts().deleteOne({ _id: id })).deletedCount > 0;
    },
    versionNumbers,
    version,
    async latest() {
      const newest = (await versionNumbers()).at(-1);
      return newest === undefined ? undefined : version(newest);
    },
    async insertVersion({ version: number, ...rest }) {
      try {
        await versions().insertOne({ ...rest, _id: number });
        return true;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    },
  };
}
