/**
 * The satisfaction figures of a report's range, from the `csat` collection the satisfaction
 * question writes (read only; indexed by `askedAt`): questions asked in the range and those
 * answered (the response rate), the mean and the 1–5 spread, split by whether a teammate took
 * part, by the team of the hand-off it followed and by site (a web conversation's site key; other
 * channels by name), the latest comments with their channel, conversation and transcript link,
 * and every answer for the CSV. It also counts the messages the question sent (the question, the
 * comment prompt, the thanks) per day: they are messages out like any other, but never pass
 * through the transcript. Days are the shop's (REPORTS_TIME_ZONE, `zone`), like the roll-ups'.
 * Team names come from the hand-offs, read by `_id`, 10 reads in flight.
 */
import type { Connection } from 'mongoose';
import type { CsatRecord } from '../csat/csat-store.js';
import { addDays, dayOf, siteOf as conversationSite } from './rollup-events.js';

const LATEST_COMMENTS = 20;
const READS_AT_ONCE = 10;
/** A question takes a rating for 24 hours, then a comment for minutes: its messages end within 2 days of it. */
const MESSAGE_DAYS_AFTER = 2;

/** Answers, the mean of their ratings (null: none answered) and how many were asked. */
export interface RatingGroup {
  asked: number;
  responses: number;
  score: number | null;
}

export interface CsatFigures {
  /** Questions asked in the range. */
  asked: number;
  /** Of those, answered with a rating. */
  responses: number;
  /** responses ÷ asked. */
  responseRate: number;
  /** Mean of the 1–5 ratings (null: none answered). */
  score: number | null;
  distribution: Record<'1' | '2' | '3' | '4' | '5', number>;
  /** The assistant alone (asked when the conversation went quiet) vs after a teammate handed it back. */
  byPerson: { assistantAlone: RatingGroup; afterTeammate: RatingGroup };
  /** After a teammate: by the team of the hand-off. */
  byTeam: Record<string, RatingGroup>;
  /** By site (a web conversation's site key; `whatsapp` and other channels by name). */
  bySite: Record<string, RatingGroup>;
  comments: { at: string; rating: number; text: string; channel: string; conversation: string; transcript: string }[];
}

/** One answered question, as the CSV has it. */
export interface CsatAnswer {
  askedAt: string;
  answeredAt: string;
  channel: string;
  site: string;
  conversation: string;
  afterTeammate: boolean;
  team: string;
  rating: number;
  comment: string;
}

export interface SatisfactionRead {
  figures: CsatFigures;
  answers: CsatAnswer[];
  /** Messages the question sent, per day of the range (the shop's days). */
  messagesByDay: Record<string, number>;
}

export interface SatisfactionSource {
  /** `zone`: the IANA time zone whose days the report counts (REPORTS_TIME_ZONE); UTC by default. */
  read(query: { from: string; to: string; channel: string; site?: string; role?: string; zone?: string }): Promise<SatisfactionRead | null>;
}

/** A web conversation (`web:<site>:<visitor>:<chat>`) by its site, any other by its channel. */
const siteOf = (record: Pick<CsatRecord, 'channel' | 'conversationId'>) =>
  record.channel === 'web' ? (record.conversationId.split(':')[1] ?? 'web') : record.channel;

function group(records: readonly CsatRecord[]): RatingGroup {
  const rated = records.filter((record) => (record.score ?? 0) >= 1);
  const sum = rated.reduce((total, record) => total + (record.score ?? 0), 0);
  return { asked: records.length, responses: rated.length, score: rated.length > 0 ? sum / rated.length : null };
}

function groupBy(records: readonly CsatRecord[], by: (record: CsatRecord) => string | undefined): Record<string, RatingGroup> {
  const groups = new Map<string, CsatRecord[]>();
  for (const record of records) {
    const name = by(record);
    if (name !== undefined) groups.set(name, [...(groups.get(name) ?? []), record]);
  }
  return Object.fromEntries([...groups].sort(([a], [b]) => a.localeCompare(b)).map(([name, list]) => [name, group(list)]));
}

export function createSatisfaction(connection: Connection, transcriptLink: (conversationId: string) => string): SatisfactionSource {
  const csat = () => connection.collection<CsatRecord>('csat');
  const teamsOf = async (handoffIds: readonly string[]) => {
    const teams = new Map<string, string>();
    // One read per `_id` (FerretDB serves `_id` equality from its key, not `$in`), READS_AT_ONCE in flight.
    const handoffs = connection.collection<{ _id: string; team?: string }>('handoffs');
    for (let start = 0; start < handoffIds.length; start += READS_AT_ONCE) {
      const found = await Promise.all(handoffIds.slice(start, start + READS_AT_ONCE).map((id) => handoffs.findOne({ _id: id }, { projection: { team: 1 } })));
      for (const handoff of found) if (handoff?.team) teams.set(handoff._id, handoff.team);
    }
    return teams;
  };

  return {
    async read(query) {
      const zone = query.zone ?? 'UTC';
      // Questions asked up to 2 days before the range may still send messages in it; a day more on
      // each side holds the shop's days in any time zone (each record is then picked by its day there).
      const filter = {
        askedAt: { $gte: new Date(`${addDays(query.from, -MESSAGE_DAYS_AFTER - 1)}T00:00:00.000Z`), $lt: new Date(`${addDays(query.to, 2)}T00:00:00.000Z`) },
        ...(query.channel === 'all' ? {} : { channel: query.channel }),
      };
      // A site's: its conversations' (`web:<site>:…`); a role's: the questions asked after its turn.
      const records = (
        await csat()
          .find(filter as never)
          .toArray()
      )
        .filter((record) => !query.site || query.site === 'all' || conversationSite(record.conversationId) === query.site)
        .filter((record) => !query.role || query.role === 'all' || record.roleId === query.role);
      const messagesByDay: Record<string, number> = {};
      const sent = (at: Date | undefined) => {
        const day = at ? dayOf(at, zone) : undefined;
        if (day && day >= query.from && day <= query.to) messagesByDay[day] = (messagesByDay[day] ?? 0) + 1;
      };
      for (const record of records) {
        sent(record.askedAt);
        if ((record.score ?? 0) >= 1) sent(record.answeredAt);
        if (record.comment) sent(record.commentedAt);
      }
      const asked = records.filter((record) => {
        const day = dayOf(record.askedAt, zone);
        return day >= query.from && day <= query.to;
      });
      if (asked.length === 0) return null;
      const teams = await teamsOf([...new Set(asked.flatMap((record) => (record.handoffId ? [record.handoffId] : [])))]);
      const teamOf = (record: CsatRecord) => (record.handoffId ? (teams.get(record.handoffId) ?? 'unknown') : undefined);
      const rated = asked.filter((record) => (record.score ?? 0) >= 1);
      const distribution = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
      for (const { score } of rated) distribution[String(score) as keyof typeof distribution] += 1;
      const overall = group(asked);
      const comments = rated
        .filter((record) => record.comment)
        .map((record) => ({
          at: (record.commentedAt ?? record.answeredAt ?? record.askedAt).toISOString(),
          rating: record.score ?? 0,
          text: record.comment ?? '',
          channel: record.channel,
          conversation: record.conversationId,
          transcript: transcriptLink(record.conversationId),
        }))
        .sort((a, b) => b.at.localeCompare(a.at))
        .slice(0, LATEST_COMMENTS);
      const answers = rated
        .map((record) => ({
          askedAt: record.askedAt.toISOString(),
          answeredAt: record.answeredAt?.toISOString() ?? '',
          channel: record.channel,
          site: siteOf(record),
          conversation: record.conversationId,
          afterTeammate: record.withPerson,
          team: teamOf(record) ?? '',
          rating: record.score ?? 0,
          comment: record.comment ?? '',
        }))
        .sort((a, b) => a.askedAt.localeCompare(b.askedAt));
      const figures: CsatFigures = {
        asked: overall.asked,
        responses: overall.responses,
        responseRate: overall.responses / overall.asked,
        score: overall.score,
        distribution,
        byPerson: { assistantAlone: group(asked.filter((record) => !record.withPerson)), afterTeammate: group(asked.filter((record) => record.withPerson)) },
        byTeam: groupBy(asked, teamOf),
        bySite: groupBy(asked, siteOf),
        comments,
      };
      return { figures, answers, messagesByDay };
    },
  };
}
