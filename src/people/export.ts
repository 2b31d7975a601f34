/**
 * A person's export: one JSON document with everything the service holds about them — the
 * contact, each conversation with its messages (and each reply's delivery status), media as
 * links valid for MEDIA_LINK_MS, ratings and comments, confirmed actions, hand-offs with their
 * notices, transitions and teammates' messages, suggestions drafted from their conversations,
 * and what Redis and the queues hold (facts, recent history, pending questions, rating state,
 * unanswered questions, scheduled jobs).
 */
import type { ConnectionOptions } from 'bullmq';
import type { Connection } from 'mongoose';
import type { RedisClient } from '../redis.js';
import { exportMongo, footprintOf, valuesOf } from './mongo-stores.js';
import { exportQueues } from './queue-stores.js';
import { exportRedis } from './redis-stores.js';
import type { Person } from './resolve.js';

const MEDIA_LINK_MS = 15 * 60 * 1000;

export interface ExportDeps {
  connection: Connection;
  redis: RedisClient;
  bull: ConnectionOptions;
  queuePrefix: string;
  mediaUrl(conversationId: string, mediaId: string, ttlMs: number): string;
  /** The opaque id log lines name an identifier by (`logIdOf`, src/logger-privacy.ts). */
  logId(identifier: string): string;
}

type Doc = Record<string, unknown>;

/** The inbound texts of the person's conversations (how their unanswered questions are found). */
export async function textsOf(connection: Connection, person: Person): Promise<string[]> {
  const { conversationKeys } = await footprintOf(connection, person.conversationKeys, person.visitorPrefixes);
  const messages = await connection
    .collection('messages')
    .find({ conversationId: { $in: conversationKeys }, direction: 'inbound' }, { projection: { text: 1 } })
    .toArray();
  return messages.map((message) => String(message.text));
}

export async function exportPerson(deps: ExportDeps, id: string, person: Person) {
  const footprint = await footprintOf(deps.connection, person.conversationKeys, person.visitorPrefixes);
  const mongo = await exportMongo(deps.connection, footprint);
  const deliveries = mongo.deliveries ?? [];
  const messagesOf = (key: string) =>
    (mongo.messages ?? [])
      .filter((message) => message.conversationId === key)
      .sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)))
      .map((message) => ({ ...message, deliveries: deliveries.filter((delivery: Doc) => delivery.messageId === message._id) }));
  const conversations = footprint.conversationKeys.map((key) => ({
    key,
    record: (mongo.conversations ?? []).find((conversation) => conversation._id === key),
    messages: messagesOf(key),
  }));
  const media = (mongo['media.files'] ?? []).map((file) => {
    const metadata = (file.metadata ?? {}) as Doc;
    const conversationId = String(metadata.conversationId ?? '');
    return {
      id: String(file._id),
      conversationId,
      contentType: metadata.contentType,
      size: file.length,
      link: deps.mediaUrl(conversationId, String(file._id), MEDIA_LINK_MS),
    };
  });
  const texts = await textsOf(deps.connection, person);
  const values = valuesOf(footprint, person.visitorPrefixes);
  const names = [...values, ...footprint.mediaIds, ...person.identifiers];
  return {
    id,
    exportedAt: new Date().toISOString(),
    contact: person.contact ?? null,
    // How the service's log lines name this person: find their lines by these.
    logIds: Object.fromEntries(
      [
        ...footprint.conversationKeys,
        ...person.identifiers.filter((identifier) => !identifier.startsWith('+')),
        ...person.identifiers.filter((identifier) => identifier.startsWith('+')).map((number) => `whatsapp:${number}`),
      ].map((identifier) => [identifier, deps.logId(identifier)]),
    ),
    conversations,
    media,
    mediaLinksValidFor: `${MEDIA_LINK_MS / 60_000} minutes`,
    ratings: mongo.csat ?? [],
    actions: mongo.actions ?? [],
    handoffs: mongo.handoffs ?? [],
    notices: mongo.handoffnotices ?? [],
    handoffTransitions: mongo.handofftransitions ?? [],
    handoffReferences: mongo.handoffrefs ?? [],
    takeoverLines: mongo.teammessages ?? [],
    openHandoffs: [...(mongo.openhandoffs ?? []), ...(mongo.conversationholders ?? [])],
    suggestions: mongo.knowledge_suggestions ?? [],
    redis: await exportRedis(deps.redis, { names, values, texts }, deps.queuePrefix),
    queues: await exportQueues(deps.redis, deps.bull, deps.queuePrefix, values),
  };
}
