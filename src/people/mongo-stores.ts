/**
 * A person's records in MongoDB, read for an export and removed for an erasure, collection by
 * collection: the conversations and their messages, deliveries, media (GridFS files and chunks),
 * ratings, hand-offs with their notices, references, transitions, teammates' messages, open
 * pointers and holders, the suggestions drafted from them, and confirmed actions. An action is
 * kept for the business's books with its outcome only (tool, state, reason, dates): its
 * arguments, summary, callers and result go, and its conversation becomes the erasure's id.
 * Off the hot path (an operator's request): filters on fields other than `_id` scan on FerretDB.
 */
import mongoose, { type Connection } from 'mongoose';
import type { MediaStore } from '../media/media-store.js';

/** The collections that hold a hand-off's words or parties, by `handoffId`. */
const BY_HANDOFF = ['handoffnotices', 'handoffrefs', 'handofftransitions', 'teammessages', 'knowledge_suggestions', 'openhandoffs', 'conversationholders'];

/** What one conversation set leads to in MongoDB: the ids the later reads and deletes need. */
export interface MongoFootprint {
  conversationKeys: string[];
  messageIds: string[];
  channelMessageIds: string[];
  handoffIds: string[];
  mediaIds: string[];
}

type Doc = Record<string, unknown> & { _id: unknown };

/** Finds the person's hand-offs, messages and media from their conversation keys (and visitor prefixes). */
export async function footprintOf(connection: Connection, keys: readonly string[], visitorPrefixes: readonly string[]): Promise<MongoFootprint> {
  const db = connection.collection.bind(connection);
  const byPrefix = visitorPrefixes.length
    ? await db('conversations')
        .find({ $or: visitorPrefixes.map((prefix) => ({ _id: { $regex: `^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}` } })) } as never, {
          projection: { _id: 1 },
        })
        .toArray()
    : [];
  const conversationKeys = [...new Set([...keys, ...byPrefix.map((document) => String(document._id))])];
  const messages = await db('messages')
    .find({ conversationId: { $in: conversationKeys } }, { projection: { _id: 1, channelMessageId: 1, media: 1 } })
    .toArray();
  const handoffs = await db('handoffs')
    .find({ conversationId: { $in: conversationKeys } }, { projection: { _id: 1 } })
    .toArray();
  const files = await db('media.files')
    .find({ 'metadata.conversationId': { $in: conversationKeys } }, { projection: { _id: 1 } })
    .toArray();
  const mediaIds = new Set(files.map((file) => String(file._id)));
  for (const message of messages) for (const media of (message.media as { id?: string }[] | undefined) ?? []) if (media.id) mediaIds.add(media.id);
  return {
    conversationKeys,
    messageIds: messages.map((message) => String(message._id)),
    channelMessageIds: messages.flatMap((message) => (typeof message.channelMessageId === 'string' ? [message.channelMessageId] : [])),
    handoffIds: handoffs.map((handoff) => String(handoff._id)),
    mediaIds: [...mediaIds],
  };
}

/**
 * The ids that name the person's data outside MongoDB: conversation keys and visitor prefixes,
 * message ids and the channel message each reply answered (`out:<channel>:<inbound id>#<part>`:
 * the reply ledger's key), channel message ids (deliveries, dedupe marks) and hand-off ids.
 */
export function valuesOf(footprint: MongoFootprint, visitorPrefixes: readonly string[]): string[] {
  const inbound = footprint.messageIds.flatMap((id) => {
    const [, channel, messageId] = /^(?:in|out):([^:]+):(.+?)(?:#\d+)?$/.exec(id) ?? [];
    return channel !== undefined && messageId !== undefined ? [`${channel}:${messageId}`, messageId] : [];
  });
  return [
    ...new Set([
      ...footprint.conversationKeys,
      ...visitorPrefixes,
      ...footprint.messageIds,
      ...inbound,
      ...footprint.channelMessageIds,
      ...footprint.handoffIds,
    ]),
  ];
}

/** Each collection's filter for the person (collections with nothing to look for are left out). */
function filters(footprint: MongoFootprint): [string, object][] {
  const { conversationKeys, messageIds, channelMessageIds, handoffIds } = footprint;
  const list: [string, object][] = [
    ['conversations', { _id: { $in: conversationKeys } }],
    ['messages', { conversationId: { $in: conversationKeys } }],
    ['deliveries', { $or: [{ messageId: { $in: messageIds } }, { _id: { $in: channelMessageIds } }] }],
    ['csat', { conversationId: { $in: conversationKeys } }],
    ['actions', { conversationId: { $in: conversationKeys } }],
    ['handoffs', { _id: { $in: handoffIds } }],
    ['openhandoffs', { _id: { $in: conversationKeys } }],
    ['conversationholders', { _id: { $in: conversationKeys } }],
  ];
  for (const name of BY_HANDOFF) if (handoffIds.length) list.push([name, { handoffId: { $in: handoffIds } }]);
  return list;
}

/** Every record of the person, by collection (GridFS files as their metadata; their bytes are linked by the export). */
export async function exportMongo(connection: Connection, footprint: MongoFootprint): Promise<Record<string, Doc[]>> {
  const found: Record<string, Doc[]> = {};
  for (const [name, filter] of filters(footprint)) {
    const documents = (await connection.collection(name).find(filter).toArray()) as Doc[];
    found[name] = [...(found[name] ?? []), ...documents.filter((document) => !found[name]?.some((other) => String(other._id) === String(document._id)))];
  }
  const files = footprint.mediaIds.length
    ? await connection
        .collection('media.files')
        .find({ _id: { $in: footprint.mediaIds.map(objectIdOrString) } } as never)
        .toArray()
    : [];
  found['media.files'] = files as Doc[];
  return found;
}

const { ObjectId } = mongoose.mongo;

function objectIdOrString(id: string): unknown {
  return /^[0-9a-f]{24}$/.test(id) ? ObjectId.createFromHexString(id) : id;
}

/** Removes the person's records (an action keeps its outcome only); counts per collection. */
export async function eraseMongo(
  connection: Connection,
  footprint: MongoFootprint,
  media: Pick<MediaStore, 'remove'>,
  erasureId: string,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const add = (name: string, count: number) => {
    if (count > 0) counts[name] = (counts[name] ?? 0) + count;
  };
  for (const id of footprint.mediaIds) {
    await media.remove(id);
    add('media', 1);
  }
  for (const [name, filter] of filters(footprint)) {
    const collection = connection.collection(name);
    if (name === 'actions') {
      const result = await collection.updateMany(filter, {
        $set: { conversationId: `erased:${erasureId}` },
        $unset: { args: 1, summary: 1, proposedBy: 1, confirmedBy: 1, result: 1, error: 1, language: 1, title: 1 },
      });
      add('actions (outcome kept)', result.modifiedCount);
      continue;
    }
    add(name, (await collection.deleteMany(filter)).deletedCount);
  }
  return counts;
}
