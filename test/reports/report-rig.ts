/**
 * What the report suites built on a harness share: the reports feature on the harness's real
 * FerretDB and Redis with its router behind supertest and the real transcript writer feeding its
 * roll-ups, a transcript message as the writer receives it, a rated satisfaction question, and the
 * roll-up documents as MongoDB holds them.
 */
import express from 'express';
import request from 'supertest';
import { createCsatStore } from '../../src/csat/csat-store.js';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { ROLLUP_COLLECTION } from '../../src/reports/rollup-store.js';
import { createSatisfaction } from '../../src/reports/satisfaction.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter } from '../../src/store/transcript-writer.js';
import type { Harness } from '../support/harness.js';

export interface ReportRig {
  reports: ReportsFeature;
  http: ReturnType<typeof request>;
  writer: ReturnType<typeof createTranscriptWriter>;
}

/** The reports feature (both channels, "today" 2026-11-20), its router and a transcript writer counting into it. */
export function reportsOn(harness: Harness, adminToken: string, options: { satisfaction?: boolean } = {}): ReportRig {
  const { mongo, redis, logger, metrics, outbox } = harness.services;
  const reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp', 'web'], prices: undefined },
    ...(options.satisfaction
      ? { csat: createSatisfaction(mongo, (conversationId) => `https://shop.example.test/transcripts/${encodeURIComponent(conversationId)}`) }
      : {}),
    today: () => '2026-11-20',
  });
  const app = express();
  app.use(reports.router);
  const writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
  return { reports, http: request(app), writer };
}

/** A message record as the transcript writer receives it (the channel is the conversation key's first part). */
export const transcriptMessage = (
  id: string,
  conversationId: string,
  direction: 'inbound' | 'outbound',
  createdAt: string,
  roleId?: string,
): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: id,
    conversationId,
    channel: conversationId.split(':')[0] ?? 'whatsapp',
    direction,
    text: `text of ${id}`,
    status: direction === 'inbound' ? 'received' : 'pending',
    ...(roleId ? { roleId } : {}),
    createdAt,
    updatedAt: createdAt,
  },
});

/** A satisfaction question asked at `askedAt` in a conversation after a role's turn, rated a minute later. */
export async function rated(harness: Harness, conversation: string, roleId: string, score: number, askedAtIso: string): Promise<void> {
  const askedAt = Date.parse(askedAtIso);
  const pending = {
    id: `${conversation}|${askedAt}`,
    stage: 'score' as const,
    until: askedAt + 86_400_000,
    language: 'en',
    askedAt,
    channel: conversation.split(':')[0] ?? 'web',
    roleId,
    withPerson: false,
    trigger: 'quiet' as const,
  };
  const store = createCsatStore(harness.services.mongo);
  await store.asked(conversation, pending);
  await store.answered(conversation, { ...pending, score, answeredVia: 'tap' as const, answeredAt: askedAt + 60_000 });
}

/** The roll-up's documents in MongoDB (id and counts), by id. */
export const rollupDocuments = async (harness: Harness) =>
  (await harness.services.mongo.collection(ROLLUP_COLLECTION).find({}).toArray())
    .map(({ _id, counts }) => ({ _id, counts }))
    .sort((a, b) => String(a._id).localeCompare(String(b._id)));
