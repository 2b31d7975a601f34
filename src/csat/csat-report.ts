/**
 * The satisfaction figures of a report's range: answered questions asked in it (by `askedAt`,
 * indexed), on one channel or all. Answers are at most one per conversation a day, so a range
 * reads few documents; the page shows the mean, the 1–5 distribution and the latest comments.
 */
import type { Connection } from 'mongoose';
import type { CsatRecord } from './csat-store.js';

const LATEST_COMMENTS = 20;

export interface CsatReportFigures {
  responses: number;
  score: number;
  distribution: Record<'1' | '2' | '3' | '4' | '5', number>;
  comments: { at: string; rating: number; text: string }[];
}

export function createCsatReport(connection: Connection) {
  return {
    async summary(query: { from: string; to: string; channel: string }): Promise<CsatReportFigures | null> {
      const end = new Date(`${query.to}T00:00:00.000Z`);
      end.setUTCDate(end.getUTCDate() + 1);
      const filter = {
        askedAt: { $gte: new Date(`${query.from}T00:00:00.000Z`), $lt: end },
        score: { $gte: 1 },
        ...(query.channel === 'all' ? {} : { channel: query.channel }),
      };
      const answered = await connection
        .collection<CsatRecord>('csat')
        .find(filter as never, { projection: { score: 1, comment: 1, commentedAt: 1, answeredAt: 1 } })
        .toArray();
      if (answered.length === 0) return null;
      const distribution = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
      for (const { score } of answered) distribution[String(score) as keyof typeof distribution] += 1;
      const total = answered.reduce((sum, { score }) => sum + (score ?? 0), 0);
      const comments = answered
        .filter((answer) => answer.comment)
        .map((answer) => ({
          at: (answer.commentedAt ?? answer.answeredAt ?? new Date(0)).toISOString(),
          rating: answer.score ?? 0,
          text: answer.comment ?? '',
        }))
        .sort((a, b) => b.at.localeCompare(a.at))
        .slice(0, LATEST_COMMENTS);
      return { responses: answered.length, score: total / answered.length, distribution, comments };
    },
  };
}
